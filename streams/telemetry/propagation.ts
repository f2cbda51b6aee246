/**
 * W3C Trace Context in Kafka record headers, by our own propagation (infra/otel/README.md): the
 * `traceparent` header travels with every record whatever Kafka client writes it, so the
 * trace survives a switch away from kafkajs and reaches the Python trainer, which reads the
 * same header. The propagator is `@opentelemetry/core`'s, used directly rather than through
 * the global propagator, so the process-wide `OTEL_PROPAGATORS` setting cannot drop it.
 */
import {
  ROOT_CONTEXT,
  trace,
  type Context,
  type SpanContext,
  type TextMapGetter,
  type TextMapSetter,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

/**
 * Record headers by name, as UTF-8 Buffers: the shape of the Kafka transport's RecordHeaders
 * (streams/kafka/transport.ts), restated so telemetry needs nothing from the Kafka layer.
 */
type RecordHeaders = Readonly<Record<string, Buffer>>;

const propagator = new W3CTraceContextPropagator();

/** Writes text headers as UTF-8 Buffers (the shape of {@link RecordHeaders}). */
const headerSetter: TextMapSetter<Record<string, Buffer>> = {
  set(carrier, key, value) {
    carrier[key] = Buffer.from(value, 'utf8');
  },
};

/** Reads UTF-8 Buffers back as text; an absent header is `undefined`. */
const headerGetter: TextMapGetter<RecordHeaders> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key]?.toString('utf8'),
};

/**
 * Adds `traceparent` (and `tracestate` when set) for the span in `context` to `headers`, in
 * place, and returns them. Without a valid span in `context` (telemetry off) nothing is added.
 */
export function injectTraceHeaders(
  context: Context,
  headers: Record<string, Buffer> = {},
): Record<string, Buffer> {
  propagator.inject(context, headers, headerSetter);
  return headers;
}

/**
 * The context a consumer continues from: `base` with the record's remote span as parent.
 * Records without a (valid) `traceparent` give `base` unchanged.
 */
export function extractTraceContext(headers: RecordHeaders, base: Context = ROOT_CONTEXT): Context {
  return propagator.extract(base, headers, headerGetter);
}

/** The remote span context a record's headers carry, or `undefined` when they carry none. */
export function spanContextFromHeaders(headers: RecordHeaders): SpanContext | undefined {
  return trace.getSpanContext(extractTraceContext(headers));
}

/** The W3C `traceparent` text for the span in `context`, or `undefined` when there is none. */
export function traceparentOf(context: Context): string | undefined {
  const carrier: Record<string, Buffer> = {};
  injectTraceHeaders(context, carrier);
  return carrier['traceparent']?.toString('utf8');
}

/** A context whose parent is the remote span a `traceparent` string names (ROOT when invalid). */
export function contextFromTraceparent(traceparent: string, base: Context = ROOT_CONTEXT): Context {
  return extractTraceContext({ traceparent: Buffer.from(traceparent, 'utf8') }, base);
}
