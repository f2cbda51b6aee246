/**
 * Trace context in Kafka record headers, by our own propagation (infra/otel/README.md), so the
 * trace survives a switch of Kafka client and reaches the Python trainer. Every SPA record that
 * carries a trace carries the W3C `traceparent` header (SPA's wire format: the trainer and
 * `spa tap` read it), written by `@opentelemetry/core`'s propagator directly; the propagators
 * `OTEL_PROPAGATORS` names (default `tracecontext,baggage`; `b3`, `b3multi`, `jaeger`, `none`)
 * add their headers beside it, through the API's global propagator the Node SDK sets up, and are
 * read back when a record has no `traceparent`.
 */
import {
  propagation,
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
 * (infra/kafka/client/transport.ts), restated so telemetry needs nothing from the Kafka layer.
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
 * Adds the headers of `OTEL_PROPAGATORS`' propagators and `traceparent` (and `tracestate` when
 * set) for the span in `context` to `headers`, in place, and returns them. Without a valid span
 * in `context` (telemetry off) nothing is added.
 */
export function injectTraceHeaders(
  context: Context,
  headers: Record<string, Buffer> = {},
): Record<string, Buffer> {
  propagation.inject(context, headers, headerSetter);
  propagator.inject(context, headers, headerSetter);
  return headers;
}

/**
 * The context a consumer continues from: `base` with the record's remote span as parent, from
 * its `traceparent`, else from what `OTEL_PROPAGATORS`' propagators find. Records without a
 * (valid) trace context give `base` unchanged.
 */
export function extractTraceContext(headers: RecordHeaders, base: Context = ROOT_CONTEXT): Context {
  return propagator.extract(propagation.extract(base, headers, headerGetter), headers, headerGetter);
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
