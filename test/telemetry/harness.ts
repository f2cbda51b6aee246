/**
 * Test helpers: telemetry started with in-memory exporters, and a tiny OTLP/HTTP receiver
 * (node:http on 127.0.0.1) that accepts OTLP/JSON `POST /v1/traces` and `/v1/metrics`.
 */
import { createServer, type Server } from 'node:http';
import { AggregationTemporality, MetricReader, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace';
import { startTelemetry, type Telemetry, type TelemetryOptions } from '../../streams/telemetry/telemetry.js';

/** A pull reader: `collect()` returns what the SDK has aggregated so far. */
class TestMetricReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

/** Telemetry with in-memory span exporter and metric reader (every episode sampled unless told). */
export interface InMemoryTelemetry {
  readonly telemetry: Telemetry;
  readonly spans: InMemorySpanExporter;
  readonly reader: TestMetricReader;
  /** Flushes (resource detection may delay export) and returns the finished spans. */
  finished(): Promise<ReadableSpan[]>;
  /** Collected data points of one metric by name, as [attributes, value] pairs. */
  points(name: string): Promise<{ attributes: Record<string, unknown>; value: unknown }[]>;
  unit(name: string): Promise<string | undefined>;
}

function metricByName(resource: ResourceMetrics, name: string) {
  return resource.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name);
}

export async function startInMemoryTelemetry(
  options: Partial<TelemetryOptions> = {},
): Promise<InMemoryTelemetry> {
  const spans = new InMemorySpanExporter();
  const reader = new TestMetricReader();
  const telemetry = await startTelemetry({
    serviceName: 'spa-test',
    enabled: true,
    spanProcessors: [new SimpleSpanProcessor({ exporter: spans })],
    metricReaders: [reader],
    sampleRatio: 1,
    maxTracesPerSecond: 0, // the ratio alone, unless a test asks for the cap
    ...options,
  });
  const collect = async () => (await reader.collect()).resourceMetrics;
  return {
    telemetry,
    spans,
    reader,
    async finished() {
      await telemetry.flush();
      return spans.getFinishedSpans();
    },
    async points(name) {
      const metric = metricByName(await collect(), name);
      return (metric?.dataPoints ?? []).map((p) => ({
        attributes: p.attributes as Record<string, unknown>,
        value: p.value,
      }));
    },
    async unit(name) {
      return metricByName(await collect(), name)?.descriptor.unit;
    },
  };
}

/** One span as an OTLP/JSON receiver sees it. */
interface ReceivedSpan {
  readonly service: string;
  readonly name: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly links: readonly { traceId: string; spanId: string }[];
  readonly events: readonly { name: string; attributes: Readonly<Record<string, unknown>> }[];
  readonly attributes: Readonly<Record<string, unknown>>;
}

/** A started receiver: `url` is the OTLP base URL (append nothing; exporters add /v1/traces). */
export interface OtlpReceiver {
  readonly url: string;
  readonly spans: ReceivedSpan[];
  readonly metricNames: Set<string>;
  /** Every request's path and headers (lower-case names), in arrival order. */
  readonly requests: { path: string; headers: Readonly<Record<string, string | undefined>> }[];
  /** Resolves once `predicate` holds for the received spans (polls; rejects after `timeoutMs`). */
  waitFor(predicate: (spans: readonly ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

interface OtlpKeyValue {
  key: string;
  value: Record<string, unknown>;
}

function attributeMap(list: readonly OtlpKeyValue[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list ?? []) out[key] = Object.values(value)[0];
  return out;
}

/** Flattens an OTLP/JSON ExportTraceServiceRequest (ids are hex strings in OTLP/JSON). */
function spansOfRequest(body: unknown): ReceivedSpan[] {
  const request = body as {
    resourceSpans?: {
      resource?: { attributes?: OtlpKeyValue[] };
      scopeSpans?: {
        spans?: {
          name: string;
          traceId: string;
          spanId: string;
          parentSpanId?: string;
          links?: { traceId: string; spanId: string }[];
          events?: { name: string; attributes?: OtlpKeyValue[] }[];
          attributes?: OtlpKeyValue[];
        }[];
      }[];
    }[];
  };
  return (request.resourceSpans ?? []).flatMap((resource) => {
    const service = String(attributeMap(resource.resource?.attributes)['service.name'] ?? '');
    return (resource.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        service,
        name: span.name,
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? '',
        links: (span.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
        events: (span.events ?? []).map((e) => ({ name: e.name, attributes: attributeMap(e.attributes) })),
        attributes: attributeMap(span.attributes),
      })),
    );
  });
}

/** Starts the receiver on a free port of 127.0.0.1. Protobuf bodies are refused with 415. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const metricNames = new Set<string>();
  const requests: OtlpReceiver['requests'] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests.push({
        path: request.url ?? '',
        headers: request.headers as Record<string, string | undefined>,
      });
      if (request.method !== 'POST' || !String(request.headers['content-type']).includes('json')) {
        response.writeHead(415).end('OTLP/JSON only');
        return;
      }
      const body: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (request.url === '/v1/traces') spans.push(...spansOfRequest(body));
      else if (request.url === '/v1/metrics') for (const name of metricNamesOf(body)) metricNames.add(name);
      else return void response.writeHead(404).end();
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    metricNames,
    requests,
    async waitFor(predicate, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(spans)) {
        if (Date.now() > deadline)
          throw new Error(`OTLP receiver: condition not met in ${timeoutMs} ms; got ${spans.length} spans`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function metricNamesOf(body: unknown): string[] {
  const request = body as { resourceMetrics?: { scopeMetrics?: { metrics?: { name: string }[] }[] }[] };
  return (request.resourceMetrics ?? []).flatMap((r) =>
    (r.scopeMetrics ?? []).flatMap((s) => (s.metrics ?? []).map((m) => m.name)),
  );
}
