import { ROOT_CONTEXT, trace, TraceFlags } from '@opentelemetry/api';
import { afterEach, describe, expect, it, vi } from 'vitest';
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
  vi.unstubAllEnvs();
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

describe('OTEL_PROPAGATORS, read by the Node SDK', () => {
  /** The headers a traced record gets while telemetry runs with `propagators` (unset: the default). */
  async function headersWith(propagators?: string) {
    if (propagators !== undefined) vi.stubEnv('OTEL_PROPAGATORS', propagators);
    running = await startInMemoryTelemetry();
    const span = spaTracer().startSpan('producer');
    const headers = injectTraceHeaders(trace.setSpan(ROOT_CONTEXT, span));
    span.end();
    await running.telemetry.shutdown();
    return { headers, traceId: span.spanContext().traceId };
  }

  it('adds the headers of the propagators it names beside traceparent, which SPA always writes', async () => {
    expect(Object.keys((await headersWith()).headers)).toEqual(['traceparent']);
    const b3 = await headersWith('b3');
    expect(Object.keys(b3.headers).sort()).toEqual(['b3', 'traceparent']);
    expect(b3.headers['b3']!.toString()).toMatch(new RegExp(`^${b3.traceId}-[0-9a-f]{16}-1$`));
    const jaeger = await headersWith('tracecontext,jaeger');
    expect(Object.keys(jaeger.headers).sort()).toEqual(['traceparent', 'uber-trace-id']);
    expect(Object.keys((await headersWith('none')).headers)).toEqual(['traceparent']);
  });

  it("continues a record that carries only another propagator's context", async () => {
    vi.stubEnv('OTEL_PROPAGATORS', 'b3');
    running = await startInMemoryTelemetry();
    const traceId = 'ab'.repeat(16);
    const remote = spanContextFromHeaders({});
    expect(remote).toBeUndefined();
    const context = extractTraceContext({ b3: Buffer.from(`${traceId}-${'cd'.repeat(8)}-1`) });
    expect(trace.getSpanContext(context)).toMatchObject({ traceId, isRemote: true });
  });
});
