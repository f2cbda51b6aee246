import { ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeSpaHeaders, encodeSpaHeaders } from '../../streams/kafka/headers.js';
import {
  contextFromTraceparent,
  extractTraceContext,
  injectTraceHeaders,
  spanContextFromHeaders,
  traceparentOf,
} from '../../streams/telemetry/propagation.js';
import { spaTracer } from '../../streams/telemetry/telemetry.js';
import { startInMemoryTelemetry, type InMemoryTelemetry } from './harness.js';

let running: InMemoryTelemetry | undefined;
afterEach(async () => {
  await running?.telemetry.shutdown();
  running = undefined;
});

describe('W3C traceparent in Kafka headers', () => {
  it('injects the span context as a Buffer header that headers.ts accepts and extracts it back', async () => {
    running = await startInMemoryTelemetry();
    const span = spaTracer().startSpan('producer');
    const headers = injectTraceHeaders(trace.setSpan(ROOT_CONTEXT, span));
    const { traceId, spanId } = span.spanContext();
    expect(headers['traceparent']).toBeInstanceOf(Buffer);
    expect(headers['traceparent']!.toString()).toBe(`00-${traceId}-${spanId}-01`);
    // The Kafka layer's own header codec validates the same value.
    const onWire = encodeSpaHeaders({ traceparent: headers['traceparent']!.toString(), policyVersion: 3 });
    expect(decodeSpaHeaders(onWire).traceparent).toBe(headers['traceparent']!.toString());
    const remote = spanContextFromHeaders(onWire);
    expect(remote).toMatchObject({ traceId, spanId, isRemote: true, traceFlags: TraceFlags.SAMPLED });
    span.end();
  });

  it('adds nothing without a span and extracts nothing from a missing or malformed header', () => {
    expect(injectTraceHeaders(ROOT_CONTEXT)).toEqual({});
    expect(traceparentOf(ROOT_CONTEXT)).toBeUndefined();
    expect(spanContextFromHeaders({})).toBeUndefined();
    expect(spanContextFromHeaders({ traceparent: Buffer.from('00-zz-11-01') })).toBeUndefined();
    // All-zero trace ids are invalid per W3C Trace Context §3.2.2.3.
    const zero = `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`;
    expect(trace.getSpanContext(contextFromTraceparent(zero))).toBeUndefined();
  });

  it('keeps other headers and round-trips an unsampled context with flags 00', () => {
    const traceparent = `00-${'ab'.repeat(16)}-${'cd'.repeat(8)}-00`;
    const context = extractTraceContext({ traceparent: Buffer.from(traceparent), other: Buffer.from('x') });
    const headers = injectTraceHeaders(context, { other: Buffer.from('x') });
    expect(headers['other']!.toString()).toBe('x');
    expect(headers['traceparent']!.toString()).toBe(traceparent);
  });
});
