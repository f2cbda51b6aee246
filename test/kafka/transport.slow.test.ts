import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { firstValueFrom, mergeMap, take, timer, toArray, map } from 'rxjs';
import type { Admin } from 'kafkajs';
import { kafkajsAdmin } from '../../infra/kafka/client/kafkajs-admin.js';
import { connectKafkajsAdmin } from '../../infra/kafka/client/kafkajs-client.js';
import { applyTopics, waitForLeaders } from '../../infra/kafka/topics.js';
import { spaTopics } from '../../schemas/topics.js';
import { decodeSpaHeaders, encodeSpaHeaders } from '../../streams/kafka/headers.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import { recordStream } from '../../streams/kafka/rx-source.js';
import type {
  BatchHandler,
  ConsumedRecord,
  KafkaTransport,
  OutgoingRecord,
  RecordSource,
  SourceOptions,
} from '../../infra/kafka/client/transport.js';
import { eventually, startTestBroker, stopTestBroker, testConnection } from './harness.js';
import { kafkajsPartition } from './kafkajs-partition.js';

const ports = { port: 19092, controllerPort: 19093 };
let transport: KafkaTransport;
let admin: Admin;

async function createTopic(topic: string, partitions: number): Promise<void> {
  await admin.createTopics({
    waitForLeaders: false,
    topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }],
  });
  await waitForLeaders(kafkajsAdmin(admin), [topic]);
}

/** Reads from `options` until `count` records arrived, then closes the source. */
async function readRecords(
  transport: KafkaTransport,
  options: SourceOptions,
  count: number,
): Promise<ConsumedRecord[]> {
  const source = await transport.source(options);
  const records: ConsumedRecord[] = [];
  await source.run(async (batch) => void records.push(...batch.records));
  await eventually(
    () => records.length >= count,
    60_000,
    `${count} records from ${options.topics.join(',')}`,
  );
  await source.close();
  return records;
}

const record = (topic: string, id: number, extra: Partial<OutgoingRecord> = {}): OutgoingRecord => ({
  topic,
  key: Buffer.from(`key-${id % 7}`),
  value: Buffer.from(JSON.stringify({ id })),
  ...extra,
});

const idOf = (r: ConsumedRecord): number => (JSON.parse(r.value?.toString() ?? '{}') as { id: number }).id;

beforeAll(async () => {
  const broker = await startTestBroker('transport', ports);
  transport = kafkaTransport(testConnection(broker.brokers));
  admin = await connectKafkajsAdmin(testConnection(broker.brokers));
});

afterAll(async () => {
  await transport?.close();
  await admin?.disconnect();
  await stopTestBroker('transport', ports);
});

describe('topic definitions against the broker', () => {
  it('creates missing topics, then finds nothing to do, then repairs a drifted config', async () => {
    const definitions = spaTopics({ prefix: 'it.' });
    const first = await applyTopics(kafkajsAdmin(admin), definitions);
    expect(first.changes.map((c) => c.kind)).toEqual(Array(5).fill('create'));
    expect((await applyTopics(kafkajsAdmin(admin), definitions)).changes).toEqual([]);
    const policy = await admin.fetchTopicMetadata({ topics: ['it.policy'] });
    expect(policy.topics[0]?.partitions).toHaveLength(1);

    // Someone shortens the trajectories' retention by hand: the next apply restores it.
    const { ConfigResourceTypes } = (await import('kafkajs')).default;
    await admin.alterConfigs({
      validateOnly: false,
      resources: [
        {
          type: ConfigResourceTypes.TOPIC,
          name: 'it.trajectories',
          configEntries: [{ name: 'retention.ms', value: '1000' }],
        },
      ],
    });
    // KRaft applies config changes through the metadata log: wait until describe shows it.
    const retentionOf = async (): Promise<string | undefined> => {
      const described = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [
          { type: ConfigResourceTypes.TOPIC, name: 'it.trajectories', configNames: ['retention.ms'] },
        ],
      });
      return described.resources[0]?.configEntries[0]?.configValue;
    };
    while ((await retentionOf()) !== '1000') await new Promise((resolve) => setTimeout(resolve, 100));
    const repaired = await applyTopics(kafkajsAdmin(admin), definitions);
    expect(repaired.changes).toHaveLength(1);
    expect(repaired.summary).toContain('altered it.trajectories');
    expect(repaired.summary).toContain('retention.ms: 1000 -> -1');
    expect((await applyTopics(kafkajsAdmin(admin), definitions)).changes).toEqual([]);
  });
});

describe('transport round trip', () => {
  it('delivers keyed records with SPA headers, same key to the same partition, in order', async () => {
    await createTopic('rt', 3);
    const sink = await transport.sink();
    const headers = encodeSpaHeaders({
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      schemaFingerprint: '0123456789abcdef',
      policyVersion: 7,
    });
    const writes = await sink.send(Array.from({ length: 42 }, (_, id) => record('rt', id, { headers })));
    expect(writes.length).toBeGreaterThan(1);
    const records = await readRecords(
      transport,
      { groupId: 'rt-g', topics: ['rt'], start: { kind: 'earliest' } },
      42,
    );
    expect(records.map(idOf).sort((a, b) => a - b)).toEqual(Array.from({ length: 42 }, (_, i) => i));
    for (const r of records) expect(decodeSpaHeaders(r.headers)).toEqual(decodeSpaHeaders(headers));
    const partitionOfKey = new Map<string, number>();
    for (const r of records) {
      const key = r.key?.toString() ?? '';
      expect(partitionOfKey.get(key) ?? r.partition).toBe(r.partition);
      partitionOfKey.set(key, r.partition);
      // Kafka's default partitioner (murmur2), so every Kafka client puts a key on the same partition.
      expect({ key, partition: r.partition }).toEqual({ key, partition: kafkajsPartition(r.key!, 3) });
    }
    for (const p of [0, 1, 2]) {
      const ids = records.filter((r) => r.partition === p).map(idOf);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
    }
  });

  it('read_committed sees a committed transaction and never an aborted one; offsets commit with it', async () => {
    await createTopic('tx', 1);
    const sink = await transport.sink({ transactionalId: 'spa-test-tx' });
    await sink.transaction(async (tx) => {
      await tx.send([record('tx', 1), record('tx', 2)]);
      await tx.sendOffsets('tx-upstream', [{ topic: 'tx', partition: 0, offset: 2n }]);
    });
    await expect(
      sink.transaction(async (tx) => {
        await tx.send([record('tx', 666)]);
        throw new Error('annotation failed');
      }),
    ).rejects.toThrow('annotation failed');
    await sink.send([record('tx', 3)]);
    const records = await readRecords(
      transport,
      { groupId: 'tx-g', topics: ['tx'], start: { kind: 'earliest' } },
      3,
    );
    expect(records.map(idOf)).toEqual([1, 2, 3]);
    const offsets = await admin.fetchOffsets({ groupId: 'tx-upstream', topics: ['tx'] });
    expect(offsets[0]?.partitions[0]?.offset).toBe('2');
  });

  it('starts a group at a timestamp, and resumes from explicitly committed offsets', async () => {
    await createTopic('ts', 1);
    const sink = await transport.sink({ compression: 'none' });
    const base = Date.now() - 60_000;
    await sink.send([0, 1, 2, 3, 4, 5].map((id) => record('ts', id, { timestamp: base + id * 1000 })));
    const fromTs = await readRecords(
      transport,
      { groupId: 'ts-g', topics: ['ts'], start: { kind: 'timestamp', timestamp: base + 3500 } },
      2,
    );
    expect(fromTs.map(idOf)).toEqual([4, 5]);

    const source = await transport.source({
      groupId: 'ts-c',
      topics: ['ts'],
      start: { kind: 'earliest' },
    });
    const seen: number[] = [];
    await source.run(async (batch) => void seen.push(...batch.records.map(idOf)));
    await eventually(() => seen.length >= 6, 60_000, 'six records');
    await source.commit([{ topic: 'ts', partition: 0, offset: 2n }]); // next to read: id 2
    await source.close();
    const resumed = await readRecords(
      transport,
      { groupId: 'ts-c', topics: ['ts'], start: { kind: 'committed', fallback: 'latest' } },
      4,
    );
    expect(resumed.map(idOf)).toEqual([2, 3, 4, 5]);
  });

  it('a handler that pauses mid-batch gets the untaken tail again after resume, nothing lost or repeated', async () => {
    await createTopic('pr', 1);
    const sink = await transport.sink();
    await sink.send(Array.from({ length: 30 }, (_, id) => record('pr', id)));
    const source: RecordSource = await transport.source({
      groupId: 'pr-g',
      topics: ['pr'],
      start: { kind: 'earliest' },
    });
    const seen: number[] = [];
    let pauses = 0;
    const handler: BatchHandler = async (batch) => {
      const taken = batch.records.slice(0, 4); // take a few, then pause: the rest stays in Kafka
      seen.push(...taken.map(idOf));
      if (taken.length === batch.records.length) return;
      pauses += 1;
      source.pause([batch]);
      setTimeout(() => source.resume([batch]), 20);
      return { taken: taken.length };
    };
    await source.run(handler);
    await eventually(() => seen.length >= 30, 60_000, 'thirty records');
    await source.close();
    expect(pauses).toBeGreaterThan(0);
    expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => i));
  });

  it('recordStream keeps in-flight records within maxInFlight by pausing partitions', async () => {
    await createTopic('rx', 2);
    await (await transport.sink()).send(Array.from({ length: 60 }, (_, id) => record('rx', id)));
    const source = await transport.source({
      groupId: 'rx-g',
      topics: ['rx'],
      start: { kind: 'earliest' },
    });
    let inFlight = 0;
    let peak = 0;
    const ids = await firstValueFrom(
      recordStream(source, { maxInFlight: 5 }).pipe(
        mergeMap((item) => {
          peak = Math.max(peak, ++inFlight);
          return timer(5).pipe(map(() => (inFlight--, item.ack(), idOf(item.record))));
        }),
        take(60),
        toArray(),
      ),
    );
    expect(peak).toBeLessThanOrEqual(5);
    expect(peak).toBe(5); // the bound was reached, so backpressure really engaged
    expect([...ids].sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i));
  });
});
