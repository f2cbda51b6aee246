/**
 * Kafka send/receive spans with the OpenTelemetry messaging semantic conventions, and the
 * `traceparent` they hand on (infra/otel/README.md). Two decorators wrap the transport port, so any
 * Kafka client behind it is traced the same way:
 *
 *   const sink = tracedSink(await transport.sink());        // send spans, traceparent injected
 *   await source.run(tracedBatchHandler(handler, { groupId }));  // process spans, lag, bytes
 *
 * A record that already carries a `traceparent` (stamped from its episode span) gets a send
 * span as that span's child, and the header is replaced by the send span's own context, so
 * the consumer's span is the send span's child: env step → … → send → trainer, one trace.
 */
import {
  context as apiContext,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
} from '@opentelemetry/api';
import { spaMetrics } from '../telemetry/metrics.js';
import { extractTraceContext, injectTraceHeaders } from '../telemetry/propagation.js';
import { spaTracer, telemetryActive } from '../telemetry/telemetry.js';
import type {
  BatchHandler,
  ConsumedRecord,
  OutgoingRecord,
  PartitionWrite,
  RecordHeaders,
  RecordSink,
} from './transport.js';

/**
 * Messaging attribute names (semantic conventions v1.3x, "development" status). They are
 * copied here, as the semconv package advises for unstable names, instead of importing its
 * `incubating` entry point whose exports may change in any minor release.
 */
export const messagingAttributes = {
  system: 'messaging.system',
  destination: 'messaging.destination.name',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  partition: 'messaging.destination.partition.id',
  key: 'messaging.kafka.message.key',
  offset: 'messaging.kafka.offset',
  consumerGroup: 'messaging.consumer.group.name',
  bodySize: 'messaging.message.body.size',
  batchCount: 'messaging.batch.message_count',
} as const;

/** Attributes of a send span for one outgoing record. */
export function sendAttributes(record: OutgoingRecord): Attributes {
  return {
    [messagingAttributes.system]: 'kafka',
    [messagingAttributes.destination]: record.topic,
    [messagingAttributes.operationType]: 'send',
    [messagingAttributes.operationName]: 'send',
    ...(record.key === null ? {} : { [messagingAttributes.key]: record.key.toString('utf8') }),
    ...(record.partition === undefined ? {} : { [messagingAttributes.partition]: String(record.partition) }),
    ...(record.value === null ? {} : { [messagingAttributes.bodySize]: record.value.length }),
  };
}

/** Attributes of a process span for one consumed record. */
export function receiveAttributes(record: ConsumedRecord, groupId?: string): Attributes {
  return {
    [messagingAttributes.system]: 'kafka',
    [messagingAttributes.destination]: record.topic,
    [messagingAttributes.operationType]: 'process',
    [messagingAttributes.operationName]: 'process',
    [messagingAttributes.partition]: String(record.partition),
    [messagingAttributes.offset]: Number(record.offset),
    ...(record.key === null ? {} : { [messagingAttributes.key]: record.key.toString('utf8') }),
    ...(record.value === null ? {} : { [messagingAttributes.bodySize]: record.value.length }),
    ...(groupId === undefined ? {} : { [messagingAttributes.consumerGroup]: groupId }),
  };
}

/** Key + value + header bytes: what a record costs on the wire, for spa_topic_bytes_total. */
export function recordBytes(record: {
  key: Buffer | null;
  value: Buffer | null;
  headers?: RecordHeaders;
}): number {
  let bytes = (record.key?.length ?? 0) + (record.value?.length ?? 0);
  for (const [name, value] of Object.entries(record.headers ?? {})) bytes += name.length + value.length;
  return bytes;
}

/**
 * Starts a PRODUCER span for `record` (child of the record's own `traceparent`, else of the
 * active context) and returns it with the record re-stamped with the span's `traceparent`.
 */
export function startSendSpan(record: OutgoingRecord): { span: Span; record: OutgoingRecord } {
  const headers = record.headers ?? {};
  const parent = extractTraceContext(headers, apiContext.active());
  const span = spaTracer().startSpan(
    `send ${record.topic}`,
    { kind: SpanKind.PRODUCER, attributes: sendAttributes(record) },
    parent,
  );
  const stamped = injectTraceHeaders(trace.setSpan(parent, span), { ...headers });
  return { span, record: { ...record, headers: stamped } };
}

/**
 * True when a record's `traceparent` says "not sampled" (flags bit 0 clear): its episode was
 * not drawn for tracing, so a send or process span would be dropped anyway; skipping it keeps
 * the record's header (flags 00) and saves the span machinery per record.
 */
export function isUnsampledRecord(headers: RecordHeaders | undefined): boolean {
  const traceparent = headers?.['traceparent'];
  if (traceparent === undefined || traceparent.length !== 55) return false;
  return (parseInt(traceparent.toString('latin1', 53, 55), 16) & 1) === 0;
}

/** Ends spans as failed, naming the error. */
function failSpans(spans: readonly Span[], error: unknown): void {
  const message = error instanceof Error ? error.message : String(error);
  for (const span of spans) {
    span.setStatus({ code: SpanStatusCode.ERROR, message });
    span.end();
  }
}

/**
 * A sink that traces every record it sends and counts bytes per topic. While telemetry is off
 * it passes records through untouched (one boolean check per call).
 */
export function tracedSink(sink: RecordSink): RecordSink {
  const traced = async (
    records: readonly OutgoingRecord[],
    send: (records: readonly OutgoingRecord[]) => Promise<readonly PartitionWrite[]>,
  ) => {
    if (!telemetryActive()) return send(records);
    const bytes = spaMetrics().topicBytes;
    const started = records.map((record) =>
      isUnsampledRecord(record.headers) ? { span: undefined, record } : startSendSpan(record),
    );
    const spans = started.flatMap((s) => (s.span ? [s.span] : []));
    try {
      const writes = await send(started.map((s) => s.record));
      for (const { span, record } of started) {
        bytes.add(recordBytes(record), { topic: record.topic, operation: 'send' });
        span?.end();
      }
      return writes;
    } catch (error) {
      failSpans(spans, error);
      throw error;
    }
  };
  return {
    send: (records) => traced(records, (r) => sink.send(r)),
    transaction: (work) =>
      sink.transaction((tx) => work({ ...tx, send: (records) => traced(records, (r) => tx.send(r)) })),
    close: () => sink.close(),
  };
}

/** Options for {@link tracedBatchHandler}. */
export interface TracedHandlerOptions {
  /** Consumer group, recorded on the spans. */
  readonly groupId?: string;
  /** Called with each batch's lag (high watermark − next offset) for the spa_consumer_lag gauge. */
  readonly onLag?: (topic: string, partition: number, highWatermark: bigint, nextOffset: bigint) => void;
}

/**
 * Wraps a batch handler: one CONSUMER `process <topic>` span per record of a sampled (or
 * untraced) episode, each the child of the record's `traceparent` and all open while the
 * handler works on the batch; the handler runs with the first span active (synchronously
 * only, unless telemetry runs with `asyncContext`). Also counts received bytes and reports lag.
 */
export function tracedBatchHandler(handler: BatchHandler, options: TracedHandlerOptions = {}): BatchHandler {
  return async (batch) => {
    const last = batch.records[batch.records.length - 1];
    if (last) options.onLag?.(batch.topic, batch.partition, batch.highWatermark, last.offset + 1n);
    const attributes = { topic: batch.topic, operation: 'receive' };
    for (const record of batch.records) spaMetrics().topicBytes.add(recordBytes(record), attributes);
    const sampled = batch.records.filter((record) => !isUnsampledRecord(record.headers));
    if (!telemetryActive() || sampled.length === 0) return handler(batch);
    const spans = sampled.map((record) =>
      spaTracer().startSpan(
        `process ${record.topic}`,
        { kind: SpanKind.CONSUMER, attributes: receiveAttributes(record, options.groupId) },
        extractTraceContext(record.headers),
      ),
    );
    try {
      const outcome = await apiContext.with(trace.setSpan(apiContext.active(), spans[0]!), () =>
        handler(batch),
      );
      for (const span of spans) span.end();
      return outcome;
    } catch (error) {
      failSpans(spans, error);
      throw error;
    }
  };
}
