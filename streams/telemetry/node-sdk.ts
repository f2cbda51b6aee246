/**
 * The Node SDK (`NodeSDK` from `@opentelemetry/sdk-node`), started from resolved settings. Only
 * telemetry.ts imports this module, dynamically, when telemetry is on: importing the SDK costs
 * ~150 ms of CPU that a run with telemetry off does not pay.
 *
 * The SDK reads the standard variables itself (exporters, OTLP protocol, endpoints and headers,
 * propagators, resource detectors and attributes, export intervals, batch and span limits, log
 * level). SPA hands it only what it decides on its own:
 * - its flags as the standard variables they stand for, set while the SDK is built: `--otlp-endpoint`
 *   is `OTEL_EXPORTER_OTLP_ENDPOINT`; `--metrics-port P` is `prometheus` in `OTEL_METRICS_EXPORTER`
 *   with `OTEL_EXPORTER_PROMETHEUS_HOST=127.0.0.1` (no authentication: loopback only) and
 *   `OTEL_EXPORTER_PROMETHEUS_PORT=P`; and the exporter lists telemetry.ts resolved (unset means
 *   none without an endpoint, and no log exporter, as SPA writes no OpenTelemetry logs);
 * - the sampler: parent-based, every root span sampled unless the episode ratio is 0. SPA draws
 *   its sample per episode (`drawEpisode`, ratio from `OTEL_TRACES_SAMPLER` and a per-second cap),
 *   and every later span follows the episode's decision, down to the Python trainer;
 * - the context manager: the synchronous `StackContextManager`, unless `SPA_OTEL_ASYNC_CONTEXT=1`
 *   asks for the SDK's default AsyncLocalStorage one, whose async hooks alone cost ~5% of the
 *   random-policy generator; SPA code never relies on an active span across `await` (episode
 *   contexts are looked up by trajectory id, Kafka contexts come from headers);
 * - the resource it starts from: the command's built-in `service.name` and SPA's attributes,
 *   which the detected ones (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, process, host) override.
 */
import { createServer } from 'node:net';
import {
  context,
  diag,
  metrics,
  propagation,
  trace,
  ProxyTracerProvider,
  type Attributes,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { metrics as sdkMetrics, NodeSDK, resources } from '@opentelemetry/sdk-node';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  ParentBasedSampler,
  StackContextManager,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import type { IMetricReader } from '@opentelemetry/sdk-metrics';
import type { SpanProcessor } from '@opentelemetry/sdk-trace';

/** What the SDK is built from: the part of telemetry.ts's resolved settings it reads. */
export interface SdkSettings {
  readonly serviceName: string;
  readonly serviceVersion?: string;
  readonly resourceAttributes: Attributes;
  /** `--otlp-endpoint`, set as `OTEL_EXPORTER_OTLP_ENDPOINT` (the environment's own the SDK reads itself). */
  readonly otlpEndpoint?: string;
  /** `--metrics-port`, served by the Prometheus exporter on 127.0.0.1. */
  readonly metricsPort?: number;
  /** Trace exporters by name (empty: none), set as `OTEL_TRACES_EXPORTER`. */
  readonly tracesExporters: readonly string[];
  /** Metric exporters by name, `prometheus` for `--metrics-port` too (empty: none), set as `OTEL_METRICS_EXPORTER`. */
  readonly metricsExporters: readonly string[];
  readonly sampleRatio: number;
  readonly asyncContext: boolean;
}

/** Processors and readers that replace the exporter variables' (tests: in-memory ones). */
export interface SdkHooks {
  readonly spanProcessors?: readonly SpanProcessor[];
  readonly metricReaders?: readonly IMetricReader[];
}

/** A started SDK, as telemetry.ts drives it. */
export interface NodeSdkHandle {
  /** A tracer provider is registered (some span processor consumes spans). */
  readonly tracing: boolean;
  readonly metricsUrl?: string;
  flush(): Promise<void>;
  /** Flushes and stops exporters and the scrape endpoint, and restores the no-op API. */
  shutdown(): Promise<void>;
}

/** Builds and starts the Node SDK from `settings` (plus the test hooks' processors and readers). */
export async function startNodeSdk(settings: SdkSettings, hooks: SdkHooks): Promise<NodeSdkHandle> {
  const port = settings.metricsPort === undefined ? undefined : await claimPort(settings.metricsPort);
  const flags: Record<string, string> = {
    // SPA decided that telemetry is on (OTEL_SDK_DISABLED was read there; `enabled: true` wins over it).
    OTEL_SDK_DISABLED: 'false',
    OTEL_TRACES_EXPORTER: settings.tracesExporters.join(',') || 'none',
    OTEL_METRICS_EXPORTER: settings.metricsExporters.join(',') || 'none',
    OTEL_LOGS_EXPORTER: process.env['OTEL_LOGS_EXPORTER']?.trim() || 'none',
    ...(settings.otlpEndpoint === undefined ? {} : { OTEL_EXPORTER_OTLP_ENDPOINT: settings.otlpEndpoint }),
    ...(port === undefined
      ? {}
      : { OTEL_EXPORTER_PROMETHEUS_HOST: '127.0.0.1', OTEL_EXPORTER_PROMETHEUS_PORT: String(port) }),
  };
  const sdk = withEnvironment(flags, () => {
    const nodeSdk = new NodeSDK({
      resource: resources.defaultResource().merge(
        resources.resourceFromAttributes({
          ...settings.resourceAttributes,
          [ATTR_SERVICE_NAME]: settings.serviceName,
          ...(settings.serviceVersion === undefined
            ? {}
            : { [ATTR_SERVICE_VERSION]: settings.serviceVersion }),
        }),
      ),
      contextManager: settings.asyncContext
        ? new AsyncLocalStorageContextManager()
        : new StackContextManager(),
      sampler: new ParentBasedSampler({
        root: settings.sampleRatio === 0 ? new AlwaysOffSampler() : new AlwaysOnSampler(),
      }),
      ...(hooks.spanProcessors ? { spanProcessors: [...hooks.spanProcessors] } : {}),
      ...(hooks.metricReaders ? { metricReaders: [...hooks.metricReaders] } : {}),
    });
    nodeSdk.start();
    return nodeSdk;
  });
  const tracerProvider = registeredTracerProvider();
  const registeredMeters = metrics.getMeterProvider();
  const meterProvider = registeredMeters instanceof sdkMetrics.MeterProvider ? registeredMeters : undefined;
  const flush = async () => {
    await Promise.all([tracerProvider?.forceFlush(), meterProvider?.forceFlush()]);
  };
  return {
    tracing: tracerProvider !== undefined,
    ...(port === undefined ? {} : { metricsUrl: `http://127.0.0.1:${port}/metrics` }),
    flush,
    async shutdown() {
      try {
        await sdk.shutdown();
      } finally {
        restoreNoopApi();
      }
    },
  };
}

/** The SDK's tracer provider behind the API's proxy, or undefined when none was registered. */
function registeredTracerProvider(): TracerProvider | undefined {
  const registered = trace.getTracerProvider();
  const delegate = registered instanceof ProxyTracerProvider ? registered.getDelegate() : registered;
  return delegate instanceof TracerProvider ? delegate : undefined;
}

/**
 * Runs `build` with `variables` set in `process.env`, then puts the environment back: the SDK
 * reads the variables while it builds its exporters, and the process keeps the user's.
 */
function withEnvironment<T>(variables: Readonly<Record<string, string>>, build: () => T): T {
  const saved = Object.fromEntries(Object.keys(variables).map((name) => [name, process.env[name]]));
  Object.assign(process.env, variables);
  try {
    return build();
  } finally {
    for (const [name, value] of Object.entries(saved))
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
  }
}

/**
 * Checks that 127.0.0.1:`port` can be bound (0: finds a free port) and returns the port, so that
 * `--metrics-port` fails with a clear message; the SDK's Prometheus exporter, which binds it a
 * moment later, only logs a bind failure, and cannot pick a free port itself.
 */
async function claimPort(port: number): Promise<number> {
  const server = createServer();
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
  const address = server.address();
  const bound = typeof address === 'object' && address !== null ? address.port : port;
  await new Promise((resolve) => server.close(resolve));
  return bound;
}

/** Drops the SDK's global registrations so the no-op API answers again (and a restart is possible). */
function restoreNoopApi(): void {
  trace.disable();
  metrics.disable();
  propagation.disable();
  context.disable();
  diag.disable();
}
