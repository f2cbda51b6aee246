/**
 * Starts and stops OpenTelemetry for one process through the Node SDK (`@opentelemetry/sdk-node`,
 * loaded by {@link startTelemetry} only when telemetry is on: a run with it off loads no SDK
 * package at all), configured the standard way, by the `OTEL_*` variables (infra/otel/README.md):
 *
 *   const telemetry = await startTelemetry({ serviceName: 'spa-generator', metricsPort: 9464 });
 *   …  spaMetrics().envSteps.add(3, { env: 'sokoban' });  spaTracer().startSpan(…)
 *   await telemetry.shutdown();   // flushes spans and metrics, closes the scrape endpoint
 *
 * Telemetry is on when a signal has an exporter: `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER`
 * other than `none`, an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT` or `--otlp-endpoint`: then an
 * unset exporter variable means `otlp`, as the specification's default), or `--metrics-port`;
 * `OTEL_SDK_DISABLED=true` turns it all off. With no exporter configured SPA stays off instead of
 * exporting to the specification's default `localhost:4318`. While off, the API's no-op tracer
 * and meter answer every call.
 *
 * This module reads what decides on/off and SPA's own settings (no standard variable exists for
 * them): `SPA_TRACE_MAX_PER_SECOND`, `SPA_TRACE_STAGES`, `SPA_OTEL_ASYNC_CONTEXT`; and
 * `OTEL_TRACES_SAMPLER` (+ `_ARG`) as the fraction of episodes traced ({@link samplerRatio}).
 * Everything else (resource, OTLP protocol, headers and endpoints, propagators, export intervals,
 * log level) the Node SDK reads itself (node-sdk.ts).
 */
import { trace, type Tracer } from '@opentelemetry/api';
import type { IMetricReader } from '@opentelemetry/sdk-metrics';
import type { SpanProcessor } from '@opentelemetry/sdk-trace';
import { resetSpaMetrics, type SpaMetrics } from './metrics.js';
import type { SdkSettings } from './node-sdk.js';

/** Name and version of the tracer (instrumentation scope) of every SPA span. */
const SPA_TRACER_NAME = 'spa';

/**
 * Fraction of episodes traced when `OTEL_TRACES_SAMPLER` is unset: 1, the specification's default
 * sampler (`parentbased_always_on`). The per-second cap below bounds what a fast generator
 * spends on it; a model-driven generator (about an episode a second) traces every episode.
 */
export const DEFAULT_SAMPLE_RATIO = 1;

/**
 * Traced episodes per second at most, when nothing is configured. A generator playing thousands
 * of episodes a second (the random policy) would otherwise spend most of its time recording and
 * exporting them, and a trace backend gains nothing from hundreds of near-identical traces a
 * second; a model-driven generator stays under the cap. The same idea as Jaeger's rate-limiting
 * sampler, applied after the ratio; no standard variable sets it.
 */
export const DEFAULT_MAX_TRACES_PER_SECOND = 10;

/** The cap's bucket holds this many seconds' worth of traces, so a batch of episodes starting together is traced whole. */
export const TRACE_BURST_SECONDS = 10;

/** How to start telemetry; every field is optional except the service name. */
export interface TelemetryOptions {
  /** Built-in `service.name`, e.g. spa-generator; `OTEL_SERVICE_NAME` / `OTEL_RESOURCE_ATTRIBUTES` win. */
  readonly serviceName: string;
  readonly serviceVersion?: string;
  /** Force on (even with `OTEL_SDK_DISABLED=true`) or off; default: on when an exporter is configured. */
  readonly enabled?: boolean;
  /** `--otlp-endpoint`: base URL of an OTLP receiver, over `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  readonly otlpEndpoint?: string;
  /** `--metrics-port`: a Prometheus scrape endpoint on 127.0.0.1 (0 = any free port). */
  readonly metricsPort?: number;
  /** Fraction of new traces (episodes) to sample, 0..1, over `OTEL_TRACES_SAMPLER`. */
  readonly sampleRatio?: number;
  /** Traced episodes per second at most (0: no cap), over `SPA_TRACE_MAX_PER_SECOND`. */
  readonly maxTracesPerSecond?: number;
  /** A `stage <operator>` span per element of a sampled episode, over `SPA_TRACE_STAGES`. */
  readonly stageSpans?: boolean;
  /** AsyncLocalStorage context manager (active span survives `await`), over `SPA_OTEL_ASYNC_CONTEXT`. */
  readonly asyncContext?: boolean;
  /** Resource attributes under the environment's, e.g. { 'spa.run_id': 'r1' }. */
  readonly resourceAttributes?: Readonly<Record<string, string | number | boolean>>;
  /** Span processors instead of `OTEL_TRACES_EXPORTER`'s (tests: an in-memory exporter). */
  readonly spanProcessors?: readonly SpanProcessor[];
  /** Metric readers instead of `OTEL_METRICS_EXPORTER`'s (tests: an in-memory reader). */
  readonly metricReaders?: readonly IMetricReader[];
}

/** A running (or disabled) telemetry setup. */
export interface Telemetry {
  readonly enabled: boolean;
  /** `http://127.0.0.1:<port>/metrics` while the `--metrics-port` endpoint runs. */
  readonly metricsUrl?: string;
  /** The spa_* instruments (no-op ones when disabled). */
  readonly metrics: SpaMetrics;
  /** Exports everything recorded so far. */
  flush(): Promise<void>;
  /** Flushes, stops exporters and the scrape endpoint, and restores the no-op API. */
  shutdown(): Promise<void>;
}

/** The exporters the standard variables name for traces and for metrics. */
const EXPORTERS = {
  traces: ['otlp', 'console', 'zipkin'],
  metrics: ['otlp', 'prometheus', 'console'],
} as const;

/** The OTLP protocols the Node SDK's exporters speak (`OTEL_EXPORTER_OTLP_PROTOCOL`). */
const OTLP_PROTOCOLS = ['http/protobuf', 'http/json', 'grpc'];

/** What options and environment resolve to; node-sdk.ts builds the SDK from its part of it. */
export interface TelemetrySettings extends SdkSettings {
  readonly enabled: boolean;
  /** `OTEL_SDK_DISABLED=true` turned off what was configured. */
  readonly disabledByEnv: boolean;
  readonly maxTracesPerSecond: number;
  readonly stageSpans: boolean;
}

type Environment = Readonly<Record<string, string | undefined>>;

let running: Telemetry | undefined;
let active = false;
let episodeRatio = 0;
let traceBudget: TraceBudget | undefined;
let stageSpansOn = false;

/**
 * Draws whether a new episode is traced while telemetry runs (never when off): the sample ratio,
 * then the per-second cap.
 */
export function drawEpisode(): boolean {
  return episodeRatio > 0 && Math.random() < episodeRatio && (traceBudget?.take(performance.now()) ?? true);
}

/**
 * A token bucket: `perSecond` tokens a second, holding at most {@link TRACE_BURST_SECONDS} s's
 * worth. Written here (a few lines) because the OpenTelemetry JS SDK has no rate-limiting sampler,
 * and the decision is SPA's own per-episode draw, not a span sampler's.
 */
export class TraceBudget {
  private readonly capacity: number;
  private tokens: number;

  constructor(
    private readonly perSecond: number,
    private last: number,
  ) {
    this.capacity = Math.max(1, perSecond * TRACE_BURST_SECONDS);
    this.tokens = this.capacity;
  }

  /** Takes a token at time `now` (ms, monotonic) if one is left. */
  take(now: number): boolean {
    this.tokens = Math.min(this.capacity, this.tokens + ((now - this.last) / 1000) * this.perSecond);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

/** True while telemetry runs with stage spans on (`stageSpans`); otherwise stages only time. */
export function stageSpansEnabled(): boolean {
  return stageSpansOn;
}

/** True while telemetry runs; stages check it to skip span work entirely when off. */
export function telemetryActive(): boolean {
  return active;
}

/** The tracer for SPA spans (a no-op tracer while telemetry is off). */
export function spaTracer(): Tracer {
  return trace.getTracer(SPA_TRACER_NAME);
}

/**
 * A telemetry flag or variable (`--otlp-endpoint`, `OTEL_*`, `SPA_TRACE_*`) out of its allowed
 * values: a usage error, which the CLI ends with exit code 2 before any work.
 */
export class TelemetrySettingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TelemetrySettingError';
  }
}

/**
 * Reads options and environment into one setting (options win over variables); bad values throw
 * a {@link TelemetrySettingError} naming the input and what is allowed, where the SDK would only
 * log and fall back.
 */
export function resolveTelemetryOptions(
  options: TelemetryOptions,
  env: Environment = process.env,
): TelemetrySettings {
  const otlpEndpoint = options.otlpEndpoint;
  for (const [name, url] of [
    ['--otlp-endpoint', otlpEndpoint],
    ...['', 'TRACES_', 'METRICS_'].map((signal) => {
      const variable = `OTEL_EXPORTER_OTLP_${signal}ENDPOINT`;
      return [variable, nonEmpty(env[variable])];
    }),
  ] as const)
    if (url !== undefined && !/^https?:\/\/[^/]/.test(url))
      throw new TelemetrySettingError(
        `${name} "${url}" must be an http(s) URL such as http://127.0.0.1:4318`,
      );
  for (const variable of ['', 'TRACES_', 'METRICS_'].map((s) => `OTEL_EXPORTER_OTLP_${s}PROTOCOL`)) {
    const protocol = nonEmpty(env[variable]);
    if (protocol !== undefined && !OTLP_PROTOCOLS.includes(protocol))
      throw new TelemetrySettingError(
        `${variable}="${protocol}" must be one of ${OTLP_PROTOCOLS.join(', ')}`,
      );
  }
  const metricsPort = options.metricsPort;
  if (
    metricsPort !== undefined &&
    !(Number.isInteger(metricsPort) && metricsPort >= 0 && metricsPort < 65536)
  )
    throw new TelemetrySettingError(`metrics port "${metricsPort}" must be an integer 0..65535`);
  const endpointFor = (signal: 'TRACES' | 'METRICS') =>
    otlpEndpoint ??
    nonEmpty(env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`]) ??
    nonEmpty(env['OTEL_EXPORTER_OTLP_ENDPOINT']);
  const tracesExporters = exporterList(env, 'traces', endpointFor('TRACES') !== undefined);
  const metricsExporters = exporterList(env, 'metrics', endpointFor('METRICS') !== undefined);
  if (metricsPort !== undefined && !metricsExporters.includes('prometheus'))
    metricsExporters.push('prometheus');
  const sampleRatio = options.sampleRatio ?? samplerRatio(env) ?? DEFAULT_SAMPLE_RATIO;
  if (!(sampleRatio >= 0 && sampleRatio <= 1))
    throw new TelemetrySettingError(`trace sample ratio "${options.sampleRatio}" must be a number in 0..1`);
  const capText = nonEmpty(env['SPA_TRACE_MAX_PER_SECOND']);
  const maxTracesPerSecond =
    options.maxTracesPerSecond ?? (capText === undefined ? DEFAULT_MAX_TRACES_PER_SECOND : Number(capText));
  if (!(maxTracesPerSecond >= 0 && Number.isFinite(maxTracesPerSecond)))
    throw new TelemetrySettingError(
      `max traces per second "${options.maxTracesPerSecond ?? capText}" (SPA_TRACE_MAX_PER_SECOND) must be a number >= 0 (0: no cap)`,
    );
  const configured =
    tracesExporters.length > 0 ||
    metricsExporters.length > 0 ||
    (options.spanProcessors?.length ?? 0) > 0 ||
    (options.metricReaders?.length ?? 0) > 0;
  const disabledByEnv = options.enabled === undefined && configured && flag(env, 'OTEL_SDK_DISABLED');
  return {
    enabled: options.enabled ?? (configured && !disabledByEnv),
    disabledByEnv,
    serviceName: options.serviceName,
    ...(options.serviceVersion === undefined ? {} : { serviceVersion: options.serviceVersion }),
    resourceAttributes: { ...options.resourceAttributes },
    ...(otlpEndpoint === undefined ? {} : { otlpEndpoint: otlpEndpoint.replace(/\/+$/, '') }),
    ...(metricsPort === undefined ? {} : { metricsPort }),
    tracesExporters,
    metricsExporters,
    sampleRatio,
    maxTracesPerSecond,
    stageSpans: options.stageSpans ?? flag(env, 'SPA_TRACE_STAGES'),
    asyncContext: options.asyncContext ?? flag(env, 'SPA_OTEL_ASYNC_CONTEXT'),
  };
}

/**
 * `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER` as a list of exporter names: `none` (alone)
 * is the empty list; unset, `otlp` when an OTLP endpoint is configured, else the empty list
 * (SPA's one departure from the specification's default `otlp`: telemetry stays off unless asked
 * for). An unknown name throws, naming the variable and the allowed values.
 */
function exporterList(env: Environment, signal: 'traces' | 'metrics', hasEndpoint: boolean): string[] {
  const variable = `OTEL_${signal.toUpperCase()}_EXPORTER`;
  const names = [
    ...new Set(
      nonEmpty(env[variable])
        ?.split(',')
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    ),
  ];
  if (names.length === 0) return hasEndpoint ? ['otlp'] : [];
  const allowed: readonly string[] = EXPORTERS[signal];
  for (const name of names)
    if (!allowed.includes(name) && !(name === 'none' && names.length === 1))
      throw new TelemetrySettingError(
        `${variable}="${env[variable]}": use ${[...allowed, 'none'].join(', ')} (a comma-separated list, or none alone)`,
      );
  return names.filter((name) => name !== 'none');
}

/** The OTEL_TRACES_SAMPLER values SPA reads, each as the fraction of episodes it traces. */
const SAMPLERS: Readonly<Record<string, 'ratio' | 0 | 1>> = {
  always_on: 1,
  always_off: 0,
  traceidratio: 'ratio',
  parentbased_always_on: 1,
  parentbased_always_off: 0,
  parentbased_traceidratio: 'ratio',
};

/**
 * The episode ratio the standard `OTEL_TRACES_SAMPLER` names, or undefined when it is unset.
 * `*traceidratio` takes `OTEL_TRACES_SAMPLER_ARG` (default 1, as the OpenTelemetry SDKs do).
 * SPA draws at the episode and every later span follows its parent, so the plain forms
 * (`always_on`, `traceidratio`, …) act as their `parentbased_` forms. Other samplers
 * (`jaeger_remote`, `xray`) and a bad argument throw.
 */
export function samplerRatio(env: Environment): number | undefined {
  const name = nonEmpty(env['OTEL_TRACES_SAMPLER'])?.toLowerCase();
  if (name === undefined) return undefined;
  const kind = Object.hasOwn(SAMPLERS, name) ? SAMPLERS[name] : undefined;
  if (kind === undefined)
    throw new TelemetrySettingError(
      `OTEL_TRACES_SAMPLER="${env['OTEL_TRACES_SAMPLER']}" is not supported: use ${Object.keys(SAMPLERS).join(', ')}`,
    );
  if (kind !== 'ratio') return kind;
  const arg = nonEmpty(env['OTEL_TRACES_SAMPLER_ARG']);
  const ratio = arg === undefined ? 1 : Number(arg);
  if (!(ratio >= 0 && ratio <= 1))
    throw new TelemetrySettingError(`OTEL_TRACES_SAMPLER_ARG="${arg}" must be a number in 0..1 for ${name}`);
  return ratio;
}

/** A boolean env setting: 1/true/yes/on or 0/false/no/off (or unset: false); anything else throws. */
function flag(env: Environment, name: string): boolean {
  const text = nonEmpty(env[name])?.toLowerCase();
  if (text === undefined || ['0', 'false', 'no', 'off'].includes(text)) return false;
  if (['1', 'true', 'yes', 'on'].includes(text)) return true;
  throw new TelemetrySettingError(`${name}="${env[name]}" must be 1/true/yes/on or 0/false/no/off`);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/**
 * Starts telemetry for this process. Only one may run at a time (the OpenTelemetry API holds
 * process-global providers): starting a second one without shutting down the first throws.
 * The Node SDK is imported here, on the first start, and only when telemetry is on.
 */
export async function startTelemetry(options: TelemetryOptions): Promise<Telemetry> {
  if (running) throw new Error('telemetry is already running in this process: shut it down first');
  const settings = resolveTelemetryOptions(options);
  if (!settings.enabled) return disabledTelemetry();
  const { startNodeSdk } = await import('./node-sdk.js');
  const sdk = await startNodeSdk(settings, options);
  active = true;
  // Without a span processor (metrics only) spans would go nowhere: draw no episode at all.
  episodeRatio = sdk.tracing ? settings.sampleRatio : 0;
  traceBudget =
    settings.maxTracesPerSecond > 0
      ? new TraceBudget(settings.maxTracesPerSecond, performance.now())
      : undefined;
  stageSpansOn = settings.stageSpans;
  const telemetry: Telemetry = {
    enabled: true,
    ...(sdk.metricsUrl === undefined ? {} : { metricsUrl: sdk.metricsUrl }),
    metrics: resetSpaMetrics(),
    flush: () => sdk.flush(),
    async shutdown() {
      if (running !== telemetry) return;
      running = undefined;
      active = false;
      episodeRatio = 0;
      traceBudget = undefined;
      stageSpansOn = false;
      try {
        await sdk.shutdown();
      } finally {
        resetSpaMetrics();
      }
    },
  };
  running = telemetry;
  return telemetry;
}

/**
 * Runs `work` with telemetry started from `options` and shuts it down afterwards (flushing
 * spans and metrics), also when `work` throws: the shape of every CLI command that takes
 * `--metrics-port` / `--otlp-endpoint`. Announces the scrape URL on stderr.
 */
export async function withTelemetry<T>(
  options: TelemetryOptions,
  work: (telemetry: Telemetry) => Promise<T>,
): Promise<T> {
  const telemetry = await startTelemetry(options);
  if (!telemetry.enabled && resolveTelemetryOptions(options).disabledByEnv)
    process.stderr.write('[telemetry] off: OTEL_SDK_DISABLED=true (exporters and metrics port ignored)\n');
  if (telemetry.metricsUrl) process.stderr.write(`[telemetry] spa_* metrics at ${telemetry.metricsUrl}\n`);
  try {
    return await work(telemetry);
  } finally {
    await telemetry.shutdown();
  }
}

function disabledTelemetry(): Telemetry {
  return {
    enabled: false,
    metrics: resetSpaMetrics(),
    flush: async () => {},
    shutdown: async () => {},
  };
}
