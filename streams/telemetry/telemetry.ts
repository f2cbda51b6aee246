/**
 * Starts and stops OpenTelemetry for one process (infra/otel/README.md) with the two SDK providers
 * it uses, a TracerProvider and a MeterProvider (no NodeSDK: infra/otel/README.md, "Why no NodeSDK"):
 *
 *   const telemetry = await startTelemetry({ serviceName: 'spa-generator', metricsPort: 9464 });
 *   …  spaMetrics().envSteps.add(3, { env: 'sokoban' });  spaTracer().startSpan(…)
 *   await telemetry.shutdown();   // flushes spans and metrics, closes the scrape endpoint
 *
 * Configuration: options first, then SPA_* variables, then the standard OTEL_* ones, then the
 * defaults (the table and the precedence rules: infra/otel/README.md, "Turning it on"):
 * - `otlpEndpoint` / `OTEL_EXPORTER_OTLP_ENDPOINT`: base URL of an OTLP/HTTP receiver (a
 *   collector, Jaeger, Tempo, …); spans go to `<base>/v1/traces`, metrics to `<base>/v1/metrics`,
 *   as OTLP/JSON.
 * - `metricsPort` / `SPA_METRICS_PORT`: serve Prometheus text at `http://127.0.0.1:<port>/metrics`
 *   (0 picks a free port; read it from `metricsUrl`). Bound to loopback only: the endpoint has
 *   no authentication.
 * - `sampleRatio` / `SPA_TRACE_SAMPLE_RATIO` / `OTEL_TRACES_SAMPLER` (+ `OTEL_TRACES_SAMPLER_ARG`,
 *   see {@link samplerRatio}): fraction of episodes traced. The episode is the
 *   unit of sampling: `startEpisodeSpan` draws once per episode, and every later span follows
 *   its parent's decision (parent-based), so a sampled episode keeps all its spans down to the
 *   trainer and a dropped one costs no SDK span at all. Spans without a parent (rare: a record
 *   without `traceparent`) are sampled unless the ratio is 0. Default {@link DEFAULT_SAMPLE_RATIO}.
 * - `maxTracesPerSecond` / `SPA_TRACE_MAX_PER_SECOND`: a cap on the episodes the ratio draws, on
 *   average per second (bursts up to {@link TRACE_BURST_SECONDS} s's worth); 0 lifts it.
 *   Default {@link DEFAULT_MAX_TRACES_PER_SECOND}.
 * - `stageSpans` / `SPA_TRACE_STAGES=1`: a `stage <operator>` span per element per stage of a
 *   sampled episode. Off by default: stage timing goes to `spa_stage_seconds` either way, and
 *   the spans would triple a sampled episode's cost (infra/otel/README.md, Cost).
 * - `asyncContext` / `SPA_OTEL_ASYNC_CONTEXT=1`: Node's AsyncLocalStorage context manager, so
 *   the active span survives `await`. Off by default: its async hooks alone cost ~5% of the
 *   random-policy generator, and SPA code never relies on an implicit active span (episode
 *   contexts are looked up by trajectory id, Kafka contexts come from headers), so the
 *   synchronous StackContextManager is enough.
 * - `serviceName` / `OTEL_SERVICE_NAME` / `service.name` in `OTEL_RESOURCE_ATTRIBUTES`: the
 *   env wins here, as the option is each command's built-in name; `resourceAttributes` are
 *   added over `OTEL_RESOURCE_ATTRIBUTES`.
 * - `OTEL_LOG_LEVEL`: the SDK's diagnostics on the console (e.g. `debug`).
 * Telemetry is off unless `enabled: true` or an endpoint or port is configured, and off with
 * `OTEL_SDK_DISABLED=true` unless `enabled: true`; while off, the API's no-op tracer and meter
 * answer every call.
 */
import { createServer, type Server } from 'node:http';
import {
  context,
  diag,
  DiagConsoleLogger,
  metrics,
  propagation,
  trace,
  type Attributes,
  type Tracer,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { diagLogLevelFromString, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import {
  detectResources,
  hostDetector,
  processDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import { MeterProvider, PeriodicExportingMetricReader, type IMetricReader } from '@opentelemetry/sdk-metrics';
import { StackContextManager, TracerProvider } from '@opentelemetry/sdk-trace';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { resetSpaMetrics, type SpaMetrics } from './metrics.js';

/** Name and version of the tracer (instrumentation scope) of every SPA span. */
const SPA_TRACER_NAME = 'spa';

/**
 * Fraction of episodes traced when nothing is configured: a run of a few thousand episodes
 * yields a hundred full traces; with a real model (ms per token) SPA_TRACE_SAMPLE_RATIO=1 traces
 * every episode at a cost well under 1%. The per-second cap below bounds what a fast generator
 * spends on it.
 */
export const DEFAULT_SAMPLE_RATIO = 0.05;

/**
 * Traced episodes per second at most, when nothing is configured. A generator playing thousands
 * of episodes a second (the random policy) would otherwise spend ~10% of its time recording and
 * exporting the 5% it draws, and a trace backend gains nothing from hundreds of near-identical
 * traces a second; a model-driven generator (about an episode a second here) stays under the cap.
 * The same idea as Jaeger's rate-limiting sampler, applied after the ratio.
 */
export const DEFAULT_MAX_TRACES_PER_SECOND = 10;

/** The cap's bucket holds this many seconds' worth of traces, so a batch of episodes starting together is traced whole. */
export const TRACE_BURST_SECONDS = 10;

/** How to start telemetry; every field is optional except the service name. */
export interface TelemetryOptions {
  /** `service.name` resource attribute, e.g. spa-generator or spa-trainer. */
  readonly serviceName: string;
  readonly serviceVersion?: string;
  /** Force on or off; default: on when an OTLP endpoint or metrics port is configured. */
  readonly enabled?: boolean;
  /** Base URL of an OTLP/HTTP receiver, e.g. http://127.0.0.1:4318. */
  readonly otlpEndpoint?: string;
  /** Port of the Prometheus scrape endpoint on 127.0.0.1; 0 = any free port. */
  readonly metricsPort?: number;
  /** Fraction of new traces (episodes) to sample, 0..1. Default {@link DEFAULT_SAMPLE_RATIO}. */
  readonly sampleRatio?: number;
  /** Traced episodes per second at most (0: no cap). Default {@link DEFAULT_MAX_TRACES_PER_SECOND}. */
  readonly maxTracesPerSecond?: number;
  /** A `stage <operator>` span per element of a sampled episode. Default false (metrics only). */
  readonly stageSpans?: boolean;
  /** AsyncLocalStorage context manager (active span survives `await`). Default false. */
  readonly asyncContext?: boolean;
  /** Extra resource attributes, e.g. { 'spa.run_id': 'r1' }. */
  readonly resourceAttributes?: Readonly<Record<string, string | number | boolean>>;
  /** How often metrics are pushed over OTLP (ms). Default 10000. */
  readonly metricExportIntervalMs?: number;
  /** Additional span processors (tests: an in-memory exporter). */
  readonly spanProcessors?: readonly SpanProcessor[];
  /** Additional metric readers (tests: an in-memory reader). */
  readonly metricReaders?: readonly IMetricReader[];
  /** Where env settings are read from; default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/** A running (or disabled) telemetry setup. */
export interface Telemetry {
  readonly enabled: boolean;
  /** `http://127.0.0.1:<port>/metrics` while the scrape endpoint runs. */
  readonly metricsUrl?: string;
  /** The spa_* instruments (no-op ones when disabled). */
  readonly metrics: SpaMetrics;
  /** Exports everything recorded so far. */
  flush(): Promise<void>;
  /** Flushes, stops exporters and the scrape endpoint, and restores the no-op API. */
  shutdown(): Promise<void>;
}

interface Resolved {
  readonly enabled: boolean;
  /** `OTEL_SDK_DISABLED=true` turned off what was configured. */
  readonly disabledByEnv: boolean;
  readonly serviceName: string;
  /** `OTEL_RESOURCE_ATTRIBUTES` under `resourceAttributes` (without service.name). */
  readonly resourceAttributes: Attributes;
  readonly logLevel?: string;
  readonly otlpEndpoint?: string;
  readonly metricsPort?: number;
  readonly sampleRatio: number;
  readonly maxTracesPerSecond: number;
  readonly stageSpans: boolean;
  readonly asyncContext: boolean;
}

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

/** Reads options and env into one setting; bad values throw naming the input and what is allowed. */
export function resolveTelemetryOptions(options: TelemetryOptions): Resolved {
  const env = options.env ?? process.env;
  const otlpEndpoint = options.otlpEndpoint ?? nonEmpty(env['OTEL_EXPORTER_OTLP_ENDPOINT']);
  if (otlpEndpoint !== undefined && !/^https?:\/\/[^/]/.test(otlpEndpoint))
    throw new Error(`OTLP endpoint "${otlpEndpoint}" must be an http(s) URL such as http://127.0.0.1:4318`);
  const portText = nonEmpty(env['SPA_METRICS_PORT']);
  const metricsPort = options.metricsPort ?? (portText === undefined ? undefined : Number(portText));
  if (
    metricsPort !== undefined &&
    !(Number.isInteger(metricsPort) && metricsPort >= 0 && metricsPort < 65536)
  )
    throw new Error(`metrics port "${options.metricsPort ?? portText}" must be an integer 0..65535`);
  const ratioText = nonEmpty(env['SPA_TRACE_SAMPLE_RATIO']);
  const sampleRatio =
    options.sampleRatio ??
    (ratioText === undefined ? (samplerRatio(env) ?? DEFAULT_SAMPLE_RATIO) : Number(ratioText));
  if (!(sampleRatio >= 0 && sampleRatio <= 1))
    throw new Error(`trace sample ratio "${options.sampleRatio ?? ratioText}" must be a number in 0..1`);
  const capText = nonEmpty(env['SPA_TRACE_MAX_PER_SECOND']);
  const maxTracesPerSecond =
    options.maxTracesPerSecond ?? (capText === undefined ? DEFAULT_MAX_TRACES_PER_SECOND : Number(capText));
  if (!(maxTracesPerSecond >= 0 && Number.isFinite(maxTracesPerSecond)))
    throw new Error(
      `max traces per second "${options.maxTracesPerSecond ?? capText}" (SPA_TRACE_MAX_PER_SECOND) must be a number >= 0 (0: no cap)`,
    );
  const stageSpans = options.stageSpans ?? flag(env, 'SPA_TRACE_STAGES');
  const asyncContext = options.asyncContext ?? flag(env, 'SPA_OTEL_ASYNC_CONTEXT');
  const { 'service.name': envResourceName, ...envResource } = parseResourceAttributes(env);
  const serviceName = nonEmpty(env['OTEL_SERVICE_NAME']) ?? envResourceName ?? options.serviceName;
  const logLevel = nonEmpty(env['OTEL_LOG_LEVEL']);
  const configured =
    otlpEndpoint !== undefined ||
    metricsPort !== undefined ||
    (options.spanProcessors?.length ?? 0) > 0 ||
    (options.metricReaders?.length ?? 0) > 0;
  const disabledByEnv = options.enabled === undefined && configured && flag(env, 'OTEL_SDK_DISABLED');
  return {
    enabled: options.enabled ?? (configured && !disabledByEnv),
    disabledByEnv,
    serviceName,
    resourceAttributes: { ...envResource, ...options.resourceAttributes },
    ...(logLevel === undefined ? {} : { logLevel }),
    ...(otlpEndpoint === undefined ? {} : { otlpEndpoint: otlpEndpoint.replace(/\/+$/, '') }),
    ...(metricsPort === undefined ? {} : { metricsPort }),
    sampleRatio,
    maxTracesPerSecond,
    stageSpans,
    asyncContext,
  };
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
export function samplerRatio(env: Readonly<Record<string, string | undefined>>): number | undefined {
  const name = nonEmpty(env['OTEL_TRACES_SAMPLER'])?.toLowerCase();
  if (name === undefined) return undefined;
  const kind = Object.hasOwn(SAMPLERS, name) ? SAMPLERS[name] : undefined;
  if (kind === undefined)
    throw new Error(
      `OTEL_TRACES_SAMPLER="${env['OTEL_TRACES_SAMPLER']}" is not supported: use ${Object.keys(SAMPLERS).join(', ')}`,
    );
  if (kind !== 'ratio') return kind;
  const arg = nonEmpty(env['OTEL_TRACES_SAMPLER_ARG']);
  const ratio = arg === undefined ? 1 : Number(arg);
  if (!(ratio >= 0 && ratio <= 1))
    throw new Error(`OTEL_TRACES_SAMPLER_ARG="${arg}" must be a number in 0..1 for ${name}`);
  return ratio;
}

/** `OTEL_RESOURCE_ATTRIBUTES`: `key=value` pairs split by commas, percent-encoded; bad pairs throw. */
function parseResourceAttributes(env: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const text = nonEmpty(env['OTEL_RESOURCE_ATTRIBUTES']);
  const attributes: Record<string, string> = {};
  for (const pair of text?.split(',') ?? []) {
    const at = pair.indexOf('=');
    const key = at > 0 ? decodeURIComponent(pair.slice(0, at).trim()) : '';
    if (key === '') throw new Error(`OTEL_RESOURCE_ATTRIBUTES: "${pair}" is not key=value`);
    attributes[key] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return attributes;
}

/** A boolean env setting: 1/true/yes/on or 0/false/no/off (or unset: false); anything else throws. */
function flag(env: Readonly<Record<string, string | undefined>>, name: string): boolean {
  const text = nonEmpty(env[name])?.toLowerCase();
  if (text === undefined || ['0', 'false', 'no', 'off'].includes(text)) return false;
  if (['1', 'true', 'yes', 'on'].includes(text)) return true;
  throw new Error(`${name}="${env[name]}" must be 1/true/yes/on or 0/false/no/off`);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

/**
 * Starts telemetry for this process. Only one may run at a time (the OpenTelemetry API holds
 * process-global providers): starting a second one without shutting down the first throws.
 */
export async function startTelemetry(options: TelemetryOptions): Promise<Telemetry> {
  if (running) throw new Error('telemetry is already running in this process: shut it down first');
  const settings = resolveTelemetryOptions(options);
  if (!settings.enabled) return disabledTelemetry();
  const spanProcessors: SpanProcessor[] = [...(options.spanProcessors ?? [])];
  const metricReaders: IMetricReader[] = [...(options.metricReaders ?? [])];
  if (settings.otlpEndpoint !== undefined) {
    spanProcessors.push(
      new BatchSpanProcessor(new OTLPTraceExporter({ url: `${settings.otlpEndpoint}/v1/traces` })),
    );
    metricReaders.push(
      new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter({ url: `${settings.otlpEndpoint}/v1/metrics` }),
        exportIntervalMillis: options.metricExportIntervalMs ?? 10_000,
      }),
    );
  }
  const scrape =
    settings.metricsPort === undefined ? undefined : await startScrapeEndpoint(settings.metricsPort);
  if (scrape) metricReaders.push(scrape.exporter);
  // What NodeSDK.start() did with these options, without loading its other exporters: the
  // resource (service name and attributes over the process and host detectors' ones), a context
  // manager, the W3C propagator, and a provider per signal only when something consumes it.
  if (settings.logLevel !== undefined)
    diag.setLogger(new DiagConsoleLogger(), { logLevel: diagLogLevelFromString(settings.logLevel) });
  const resource = detectResources({ detectors: [processDetector, hostDetector] }).merge(
    resourceFromAttributes({
      ...settings.resourceAttributes,
      [ATTR_SERVICE_NAME]: settings.serviceName,
      ...(options.serviceVersion === undefined ? {} : { [ATTR_SERVICE_VERSION]: options.serviceVersion }),
    }),
  );
  // The synchronous manager by default; see the module doc for why not AsyncLocalStorage.
  context.setGlobalContextManager(
    (settings.asyncContext ? new AsyncLocalStorageContextManager() : new StackContextManager()).enable(),
  );
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const meterProvider =
    metricReaders.length > 0 ? new MeterProvider({ resource, readers: metricReaders }) : undefined;
  if (meterProvider) metrics.setGlobalMeterProvider(meterProvider);
  const tracerProvider =
    spanProcessors.length > 0
      ? new TracerProvider({
          resource,
          spanProcessors,
          // Episodes are sampled at their start (episodeSampleRatio); everything else follows its
          // parent. A root span other than an episode's is kept unless the ratio is 0.
          sampler: new ParentBasedSampler({
            root: settings.sampleRatio === 0 ? new AlwaysOffSampler() : new AlwaysOnSampler(),
          }),
        })
      : undefined;
  if (tracerProvider) trace.setGlobalTracerProvider(tracerProvider);
  active = true;
  // Without a span processor (metrics only) spans would go nowhere: draw no episode at all.
  episodeRatio = spanProcessors.length > 0 ? settings.sampleRatio : 0;
  traceBudget =
    settings.maxTracesPerSecond > 0
      ? new TraceBudget(settings.maxTracesPerSecond, performance.now())
      : undefined;
  stageSpansOn = settings.stageSpans;
  const telemetry: Telemetry = {
    enabled: true,
    ...(scrape ? { metricsUrl: scrape.url } : {}),
    metrics: resetSpaMetrics(),
    flush: () => flushAll(spanProcessors, metricReaders),
    async shutdown() {
      if (running !== telemetry) return;
      running = undefined;
      active = false;
      episodeRatio = 0;
      traceBudget = undefined;
      stageSpansOn = false;
      try {
        await Promise.all([tracerProvider?.shutdown(), meterProvider?.shutdown()]);
      } finally {
        if (settings.logLevel !== undefined) diag.disable();
        await scrape?.close();
        restoreNoopApi();
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
    process.stderr.write(
      '[telemetry] off: OTEL_SDK_DISABLED=true (metrics port and OTLP endpoint ignored)\n',
    );
  if (telemetry.metricsUrl) process.stderr.write(`[telemetry] spa_* metrics at ${telemetry.metricsUrl}\n`);
  try {
    return await work(telemetry);
  } finally {
    await telemetry.shutdown();
  }
}

async function flushAll(
  processors: readonly SpanProcessor[],
  readers: readonly IMetricReader[],
): Promise<void> {
  await Promise.all([...processors.map((p) => p.forceFlush()), ...readers.map((r) => r.forceFlush())]);
}

/** Drops the SDK's global registrations so the no-op API answers again (and a restart is possible). */
function restoreNoopApi(): void {
  trace.disable();
  metrics.disable();
  propagation.disable();
  context.disable();
  resetSpaMetrics();
}

function disabledTelemetry(): Telemetry {
  return {
    enabled: false,
    metrics: resetSpaMetrics(),
    flush: async () => {},
    shutdown: async () => {},
  };
}

interface ScrapeEndpoint {
  readonly exporter: PrometheusExporter;
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Serves the Prometheus exporter's text from our own `node:http` server on 127.0.0.1: the
 * exporter's built-in server cannot bind port 0 and only logs a bind failure, while this one
 * reports the port it got and fails `startTelemetry` with a clear message.
 */
async function startScrapeEndpoint(port: number): Promise<ScrapeEndpoint> {
  const exporter = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
  const server: Server = createServer((request, response) => {
    if (request.url?.split('?')[0] === '/metrics') exporter.getMetricsRequestHandler(request, response);
    else response.writeHead(404, { 'content-type': 'text/plain' }).end('try /metrics\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: Error) =>
      reject(
        new Error(
          `cannot serve metrics on 127.0.0.1:${port}: ${error.message} (pick another --metrics-port)`,
        ),
      ),
    );
    server.listen({ host: '127.0.0.1', port }, resolve);
  });
  server.unref();
  const address = server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  diag.debug(`spa metrics at http://127.0.0.1:${bound}/metrics`);
  return {
    exporter,
    url: `http://127.0.0.1:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // a scraper's keep-alive socket must not hold shutdown
      }),
  };
}
