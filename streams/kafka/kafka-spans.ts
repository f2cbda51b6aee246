/**
 * Kafka send/receive spans with the OpenTelemetry messaging semantic conventions, and the
 * `traceparent` they hand on (infra/otel/README.md). Two decorators wrap the transport port, so any
 * Kafka client behind it is traced the same way:
 *
 *   const sink = tracedSink(await transport.sink(), { brokers });     // send spans, traceparent injected
 *   await source.run(tracedBatchHandler(handler, { groupId, brokers }));  // process spans, lag, bytes
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
import { ATTR_SERVER_ADDRESS, ATTR_SERVER_PORT } from '@opentelemetry/semantic-conventions';
import type {
  ATTR_KAFKA_MESSAGE_KEY,
  ATTR_KAFKA_OFFSET,
  ATTR_MESSAGING_BATCH_MESSAGE_COUNT,
  ATTR_MESSAGING_CONSUMER_GROUP_NAME,
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_DESTINATION_PARTITION_ID,
  ATTR_MESSAGING_MESSAGE_BODY_SIZE,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM_NAME,
  MESSAGING_OPERATION_TYPE_VALUE_PROCESS,
  MESSAGING_OPERATION_TYPE_VALUE_SEND,
  MESSAGING_SYSTEM_NAME_VALUE_KAFKA,
} from '@opentelemetry/semantic-conventions/incubating';
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
} from '../../infra/kafka/client/transport.js';

/**
 * Messaging attribute names of the semantic conventions in @opentelemetry/semantic-conventions
 * (the version pinned in package.json), none of them deprecated there: `messaging.system.name`
 * (was `messaging.system`), `kafka.message.key` (was `messaging.kafka.message.key`),
 * `kafka.offset` (was `messaging.kafka.offset` / `messaging.kafka.message.offset`).
 * `server.address` / `server.port` are stable and imported as values. The messaging names are
 * "development" status and live in the package's `incubating` entry, a ~1 MB module that
 * costs ~15 ms to import; so they are checked against it at compile time (`typeof`, a
 * type-only import) rather than loaded at run time. A rename there fails `tsc`, a deprecation
 * fails test/telemetry/kafka-spans.test.ts.
 */
export const messagingAttributes: {
  readonly system: typeof ATTR_MESSAGING_SYSTEM_NAME;
  readonly destination: typeof ATTR_MESSAGING_DESTINATION_NAME;
  readonly operationType: typeof ATTR_MESSAGING_OPERATION_TYPE;
  readonly operationName: typeof ATTR_MESSAGING_OPERATION_NAME;
  readonly partition: typeof ATTR_MESSAGING_DESTINATION_PARTITION_ID;
  readonly key: typeof ATTR_KAFKA_MESSAGE_KEY;
  readonly offset: typeof ATTR_KAFKA_OFFSET;
  readonly consumerGroup: typeof ATTR_MESSAGING_CONSUMER_GROUP_NAME;
  readonly bodySize: typeof ATTR_MESSAGING_MESSAGE_BODY_SIZE;
  readonly batchCount: typeof ATTR_MESSAGING_BATCH_MESSAGE_COUNT;
  readonly serverAddress: typeof ATTR_SERVER_ADDRESS;
  readonly serverPort: typeof ATTR_SERVER_PORT;
} = {
  system: 'messaging.system.name',
  destination: 'messaging.destination.name',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  partition: 'messaging.destination.partition.id',
  key: 'kafka.message.key',
  offset: 'kafka.offset',
  consumerGroup: 'messaging.consumer.group.name',
  bodySize: 'messaging.message.body.size',
  batchCount: 'messaging.batch.message_count',
  serverAddress: ATTR_SERVER_ADDRESS,
  serverPort: ATTR_SERVER_PORT,
};

const KAFKA: typeof MESSAGING_SYSTEM_NAME_VALUE_KAFKA = 'kafka';
const SEND: typeof MESSAGING_OPERATION_TYPE_VALUE_SEND = 'send';
const PROCESS: typeof MESSAGING_OPERATION_TYPE_VALUE_PROCESS = 'process';

/**
 * `server.address` / `server.port` of the first bootstrap broker (`host:port`, IPv6 hosts in
 * brackets): the client does not say which broker served a record, so every span names the
 * address it was configured with. No attributes for an empty list or an unparsable entry.
 */
export function serverAttributes(brokers: readonly string[] | undefined): Attributes {
  const match = /^\[?([^\]]+?)\]?:(\d+)$/.exec(brokers?.[0]?.trim() ?? '');
  if (!match) return {};
  return {
    [messagingAttributes.serverAddress]: match[1]!,
    [messagingAttributes.serverPort]: Number(match[2]),
  };
}

/** Attributes of a send span for one outgoing record. */
function sendAttributes(record: OutgoingRecord, server: Attributes = {}): Attributes {
  return {
    [messagingAttributes.system]: KAFKA,
    [messagingAttributes.destination]: record.topic,
    [messagingAttributes.operationType]: SEND,
    [messagingAttributes.operationName]: SEND,
    ...(record.key === null ? {} : { [messagingAttributes.key]: record.key.toString('utf8') }),
    ...(record.partition === undefined ? {} : { [messagingAttributes.partition]: String(record.partition) }),
    ...(record.value === null ? {} : { [messagingAttributes.bodySize]: record.value.length }),
    ...server,
  };
}

/** Attributes of a process span for one consumed record. */
function receiveAttributes(record: ConsumedRecord, groupId?: string, server: Attributes = {}): Attributes {
  return {
    [messagingAttributes.system]: KAFKA,
    [messagingAttributes.destination]: record.topic,
    [messagingAttributes.operationType]: PROCESS,
    [messagingAttributes.operationName]: PROCESS,
    [messagingAttributes.partition]: String(record.partition),
    [messagingAttributes.offset]: Number(record.offset),
    ...(record.key === null ? {} : { [messagingAttributes.key]: record.key.toString('utf8') }),
    ...(record.value === null ? {} : { [messagingAttributes.bodySize]: record.value.length }),
    ...(groupId === undefined ? {} : { [messagingAttributes.consumerGroup]: groupId }),
    ...server,
  };
}

/** Key + value + header bytes: what a record costs on the wire, for spa_topic_bytes_total. */
function recordBytes(record: { key: Buffer | null; value: Buffer | null; headers?: RecordHeaders }): number {
  let bytes = (record.key?.length ?? 0) + (record.value?.length ?? 0);
  for (const [name, value] of Object.entries(record.headers ?? {})) bytes += name.length + value.length;
  return bytes;
}

/**
 * Starts a PRODUCER span for `record` (child of the record's own `traceparent`, else of the
 * active context) and returns it with the record re-stamped with the span's `traceparent`.
 */
function startSendSpan(
  record: OutgoingRecord,
  server: Attributes = {},
): { span: Span; record: OutgoingRecord } {
  const headers = record.headers ?? {};
  const parent = extractTraceContext(headers, apiContext.active());
  const span = spaTracer().startSpan(
    `send ${record.topic}`,
    { kind: SpanKind.PRODUCER, attributes: sendAttributes(record, server) },
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
function isUnsampledRecord(headers: RecordHeaders | undefined): boolean {
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

/** Where the traced client connects: its bootstrap brokers, for `server.address` / `server.port`. */
export interface TracedKafkaOptions {
  readonly brokers?: readonly string[];
}

/**
 * A sink that traces every record it sends and counts bytes per topic. While telemetry is off
 * it passes records through untouched (one boolean check per call).
 */
export function tracedSink(sink: RecordSink, options: TracedKafkaOptions = {}): RecordSink {
  const server = serverAttributes(options.brokers);
  const traced = async (
    records: readonly OutgoingRecord[],
    send: (records: readonly OutgoingRecord[]) => Promise<readonly PartitionWrite[]>,
  ) => {
    if (!telemetryActive()) return send(records);
    const bytes = spaMetrics().topicBytes;
    const started = records.map((record) =>
      isUnsampledRecord(record.headers) ? { span: undefined, record } : startSendSpan(record, server),
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
    oversized: (records) => sink.oversized(records),
    transaction: (work) =>
      sink.transaction((tx) => work({ ...tx, send: (records) => traced(records, (r) => tx.send(r)) })),
    close: () => sink.close(),
  };
}

/** Options for {@link tracedBatchHandler}. */
export interface TracedHandlerOptions extends TracedKafkaOptions {
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
  const server = serverAttributes(options.brokers);
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
        { kind: SpanKind.CONSUMER, attributes: receiveAttributes(record, options.groupId, server) },
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
