import { SpanKind, trace } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import { messagingAttributes, tracedBatchHandler, tracedSink } from '../../streams/kafka/kafka-spans.js';
import type {
  ConsumedBatch,
  OutgoingRecord,
  PartitionWrite,
  RecordSink,
  SinkTransaction,
} from '../../streams/kafka/transport.js';
import { episodeTraces, startEpisodeSpan } from '../../streams/telemetry/episode-spans.js';
import { spanContextFromHeaders } from '../../streams/telemetry/propagation.js';
import { startInMemoryTelemetry, type InMemoryTelemetry } from './harness.js';

let running: InMemoryTelemetry | undefined;
afterEach(async () => {
  await running?.telemetry.shutdown();
  running = undefined;
  episodeTraces.clear();
});

/** A port-level stand-in that keeps what was sent (the real broker is exercised in test/kafka). */
function memorySink(fail = false): RecordSink & { sent: OutgoingRecord[] } {
  const sent: OutgoingRecord[] = [];
  const send = async (records: readonly OutgoingRecord[]): Promise<readonly PartitionWrite[]> => {
    if (fail) throw new Error('broker down');
    sent.push(...records);
    return [{ topic: records[0]!.topic, partition: 0, baseOffset: 0n }];
  };
  return {
    sent,
    send,
    transaction: async (work) => work({ send, sendOffsets: async () => {} } satisfies SinkTransaction),
    close: async () => {},
  };
}

function episodeRecord(trajectoryId: string): OutgoingRecord {
  const episode = startEpisodeSpan({ trajectoryId, groupId: 'g', env: 'sokoban', seed: 1 });
  episode.end({ success: true });
  const traceparent = episodeTraces.traceparent(trajectoryId)!;
  return {
    topic: 'spa.sft',
    key: Buffer.from(trajectoryId),
    value: Buffer.from('0123456789'),
    headers: { traceparent: Buffer.from(traceparent), 'spa-policy-version': Buffer.from('4') },
  };
}

describe('Kafka send/process spans', () => {
  it('sends each record in a PRODUCER span under its episode and stamps the send span as traceparent', async () => {
    running = await startInMemoryTelemetry();
    const inner = memorySink();
    const records = [episodeRecord('t/a'), episodeRecord('t/b')];
    await tracedSink(inner).send(records);
    const spans = await running.finished();
    const sends = spans.filter((s) => s.kind === SpanKind.PRODUCER);
    expect(sends.map((s) => s.name)).toEqual(['send spa.sft', 'send spa.sft']);
    inner.sent.forEach((record, i) => {
      const episode = spans.find((s) => s.attributes['spa.trajectory_id'] === record.key!.toString())!;
      const send = sends[i]!;
      expect(send.parentSpanContext?.spanId).toBe(episode.spanContext().spanId);
      expect(spanContextFromHeaders(record.headers!)).toMatchObject({
        traceId: episode.spanContext().traceId,
        spanId: send.spanContext().spanId,
      });
      expect(record.headers!['spa-policy-version']!.toString()).toBe('4');
      expect(send.attributes).toMatchObject({
        [messagingAttributes.system]: 'kafka',
        [messagingAttributes.destination]: 'spa.sft',
        [messagingAttributes.operationType]: 'send',
        [messagingAttributes.key]: record.key!.toString(),
        [messagingAttributes.bodySize]: 10,
      });
    });
    const bytes = await running.points('spa_topic_bytes_total');
    const expected = inner.sent.reduce(
      (acc, r) =>
        acc +
        r.key!.length +
        r.value!.length +
        Object.entries(r.headers!).reduce((a, [k, v]) => a + k.length + v.length, 0),
      0,
    );
    expect(bytes).toEqual([{ attributes: { topic: 'spa.sft', operation: 'send' }, value: expected }]);
  });

  it('traces sends inside a transaction and marks spans failed when the broker refuses', async () => {
    running = await startInMemoryTelemetry();
    await tracedSink(memorySink()).transaction((tx) => tx.send([episodeRecord('t/tx')]));
    expect((await running.finished()).filter((s) => s.kind === SpanKind.PRODUCER)).toHaveLength(1);
    await expect(tracedSink(memorySink(true)).send([episodeRecord('t/x')])).rejects.toThrow('broker down');
    const failed = (await running.finished()).filter((s) => s.kind === SpanKind.PRODUCER)[1]!;
    expect(failed.status).toMatchObject({ code: 2, message: 'broker down' });
  });

  it('continues the trace on the consumer side: one process span per record, child of the send span', async () => {
    running = await startInMemoryTelemetry();
    const inner = memorySink();
    await tracedSink(inner).send([episodeRecord('t/c'), episodeRecord('t/d')]);
    const batch: ConsumedBatch = {
      topic: 'spa.sft',
      partition: 3,
      highWatermark: 50n,
      records: inner.sent.map((r, i) => ({
        topic: 'spa.sft',
        partition: 3,
        offset: BigInt(40 + i),
        key: r.key,
        value: r.value,
        headers: r.headers!,
        timestamp: 0,
      })),
    };
    const lags: bigint[] = [];
    let activeTrace: string | undefined;
    const handler = tracedBatchHandler(
      async () => {
        activeTrace = trace.getActiveSpan()?.spanContext().traceId;
      },
      { groupId: 'trainer', onLag: (_t, _p, high, next) => lags.push(high - next) },
    );
    await handler(batch);
    expect(lags).toEqual([8n]);
    const spans = await running.finished();
    const processes = spans.filter((s) => s.kind === SpanKind.CONSUMER);
    expect(processes).toHaveLength(2);
    processes.forEach((span, i) => {
      const remote = spanContextFromHeaders(batch.records[i]!.headers)!;
      expect(span.spanContext().traceId).toBe(remote.traceId);
      expect(span.parentSpanContext?.spanId).toBe(remote.spanId);
      expect(span.attributes).toMatchObject({
        [messagingAttributes.offset]: 40 + i,
        [messagingAttributes.partition]: '3',
        [messagingAttributes.consumerGroup]: 'trainer',
        [messagingAttributes.operationType]: 'process',
      });
    });
    expect(activeTrace).toBe(processes[0]!.spanContext().traceId);
  });
});
