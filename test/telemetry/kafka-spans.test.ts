import { SpanKind, trace } from '@opentelemetry/api';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import {
  messagingAttributes,
  serverAttributes,
  tracedBatchHandler,
  tracedSink,
} from '../../streams/kafka/kafka-spans.js';
import type {
  ConsumedBatch,
  OutgoingRecord,
  PartitionWrite,
  RecordSink,
  SinkTransaction,
} from '../../infra/kafka/client/transport.js';
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
    oversized: async () => [],
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
    await tracedSink(inner, { brokers: ['127.0.0.1:9092', 'other:9093'] }).send(records);
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
      // The current names spelled out ('messaging attribute names' below checks none is deprecated).
      expect(send.attributes).toEqual({
        'messaging.system.name': 'kafka',
        'messaging.destination.name': 'spa.sft',
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'send',
        'kafka.message.key': record.key!.toString(),
        'messaging.message.body.size': 10,
        'server.address': '127.0.0.1',
        'server.port': 9092,
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
      {
        groupId: 'trainer',
        onLag: (_t, _p, high, next) => lags.push(high - next),
        brokers: ['kafka-0:9092'],
      },
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
      expect(span.attributes).toEqual({
        'messaging.system.name': 'kafka',
        'messaging.destination.name': 'spa.sft',
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'process',
        'messaging.destination.partition.id': '3',
        'kafka.offset': 40 + i,
        'kafka.message.key': batch.records[i]!.key!.toString(),
        'messaging.message.body.size': 10,
        'messaging.consumer.group.name': 'trainer',
        'server.address': 'kafka-0',
        'server.port': 9092,
      });
    });
    expect(activeTrace).toBe(processes[0]!.spanContext().traceId);
  });
});

describe('messaging attribute names', () => {
  /** The doc comment of each attribute constant in the installed semantic-conventions package. */
  function semconvDocs(): Map<string, string> {
    const require = createRequire(import.meta.url);
    const entry = require.resolve('@opentelemetry/semantic-conventions/incubating');
    const docs = new Map<string, string>();
    for (const file of ['experimental_attributes.d.cts', 'stable_attributes.d.cts']) {
      const text = readFileSync(entry.replace(/index-incubating\.cjs$/, file), 'utf8');
      for (const m of text.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*declare const ATTR_\w+: "([^"]+)";/g))
        docs.set(m[2]!, m[1]!);
    }
    return docs;
  }

  it('are all declared by the installed semantic conventions and none is deprecated there', () => {
    const docs = semconvDocs();
    expect(docs.get('messaging.system')).toMatch(/@deprecated Replaced by `messaging.system.name`/);
    for (const name of Object.values(messagingAttributes)) {
      expect(docs.has(name), `${name} is declared`).toBe(true);
      expect(docs.get(name), `${name} is not deprecated`).not.toMatch(/@deprecated/);
    }
  });

  it('server.address / server.port name the first bootstrap broker', () => {
    expect(serverAttributes(['broker-1:9093', 'broker-2:9093'])).toEqual({
      'server.address': 'broker-1',
      'server.port': 9093,
    });
    expect(serverAttributes(['[::1]:9092'])).toEqual({ 'server.address': '::1', 'server.port': 9092 });
    expect(serverAttributes([])).toEqual({});
    expect(serverAttributes(undefined)).toEqual({});
    expect(serverAttributes(['no-port'])).toEqual({});
  });
});
