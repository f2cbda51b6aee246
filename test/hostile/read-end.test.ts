/**
 * A bounded read (readTopic) ends at the end offsets it captured, without a broker: a first fetch
 * that comes back late (2 s after the join, as on a busy box) still yields every record, and a
 * partition whose last offset is a commit marker (no record delivered for it) ends when the fetch
 * reports it covered. The read with a broker paused before its first fetch is
 * read-end.slow.test.ts.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { lastValueFrom, map, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { KafkaAdmin } from '../../infra/kafka/client/admin.js';
import type {
  BatchHandler,
  ConsumedRecord,
  KafkaTransport,
  RecordSource,
  SourceOptions,
} from '../../infra/kafka/client/transport.js';
import { readTopic, type KafkaConnection } from '../../streams/kafka/consume-spa.js';

const TOPIC = 't';

const record = (partition: number, offset: bigint): ConsumedRecord => ({
  topic: TOPIC,
  partition,
  offset,
  key: null,
  value: Buffer.from(`${partition}/${offset}`),
  headers: {},
  timestamp: 0,
});

/** One fetch: the records it delivers and the offset after the last one it covered. */
interface Fetch {
  readonly partition: number;
  readonly records: readonly bigint[];
  readonly covered: bigint;
}

/**
 * A transport whose topic has partitions ending at `ends` and whose source joins at once, then
 * waits `firstFetchMs` before its fetches come back (each handed over, then reported covered).
 */
function fakeKafka(
  ends: readonly bigint[],
  fetches: readonly Fetch[],
  firstFetchMs: number,
): KafkaConnection {
  const admin = {
    listTopics: () => Promise.resolve([TOPIC]),
    topicOffsets: () => Promise.resolve(ends.map((high, partition) => ({ partition, low: 0n, high }))),
    close: () => Promise.resolve(),
  } as unknown as KafkaAdmin;
  const source = (options: SourceOptions): Promise<RecordSource> => {
    let stopped = false;
    const fetchAll = async (handler: BatchHandler): Promise<void> => {
      await delay(firstFetchMs);
      for (const fetch of fetches) {
        if (stopped) return;
        const records = fetch.records.map((offset) => record(fetch.partition, offset));
        if (records.length > 0)
          await handler({ topic: TOPIC, partition: fetch.partition, records, highWatermark: 0n });
        options.onFetched?.({ topic: TOPIC, partition: fetch.partition, offset: fetch.covered });
      }
    };
    return Promise.resolve({
      run: (handler) => {
        options.onAssigned?.(ends.map((_, partition) => ({ topic: TOPIC, partition })));
        void fetchAll(handler);
        return Promise.resolve();
      },
      pause: () => undefined,
      resume: () => undefined,
      seek: () => undefined,
      commit: () => Promise.resolve(),
      close: () => Promise.resolve(void (stopped = true)),
    });
  };
  const transport = { admin: () => Promise.resolve(admin), source } as unknown as KafkaTransport;
  return { transport, config: { brokers: ['fake:9092'] } as unknown as KafkaConnection['config'] };
}

async function readAll(kafka: KafkaConnection): Promise<string[]> {
  const read = await readTopic(kafka, { topic: TOPIC, start: { kind: 'earliest' } });
  const values = await lastValueFrom(
    read.records.pipe(
      map(({ record: r, ack }) => (ack(), r.value?.toString() ?? '')),
      toArray(),
    ),
  );
  await read.closed;
  return values;
}

describe('readTopic ends at the end offsets', () => {
  it('reads every record when the first fetch comes back 2 s after the join', async () => {
    // Two transactions per partition, each ending in a commit marker (offsets 3 and 7).
    const kafka = fakeKafka(
      [8n, 8n],
      [
        { partition: 0, records: [0n, 1n, 2n], covered: 4n },
        { partition: 1, records: [0n, 1n, 2n, 4n, 5n, 6n], covered: 8n },
        { partition: 0, records: [4n, 5n, 6n], covered: 8n },
      ],
      2000,
    );
    const values = await readAll(kafka);
    expect(values).toHaveLength(12);
    expect(values).toContain('0/6');
    expect(values).toContain('1/6');
  }, 10_000);

  it('ends when a fetch of markers only covers the last offset', async () => {
    const kafka = fakeKafka(
      [5n],
      [
        { partition: 0, records: [0n, 1n, 2n], covered: 3n },
        // An aborted record (3) and the abort marker (4): nothing delivered.
        { partition: 0, records: [], covered: 5n },
      ],
      0,
    );
    expect(await readAll(kafka)).toEqual(['0/0', '0/1', '0/2']);
  });
});
