/**
 * A bounded read (readTopic, as `spa replay`, `spa tap --limit` and the kafka bench read) gets every
 * committed record even when its first fetch comes back late: the broker is frozen (SIGSTOP) for
 * 3 s right after the read's consumer joins, as a busy box delayed the first fetch by 1.0–1.7 s
 * and a replay of 8,192 trajectories ended with no record. The topic is transactional, so each
 * partition ends in a commit marker that delivers no record; a topic of only an aborted transaction
 * ends too. The logic alone is read-end.test.ts.
 */
import { lastValueFrom, map, toArray } from 'rxjs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import { readTopic, type KafkaConnection } from '../../streams/kafka/consume-spa.js';
import { startTestBroker, stopTestBroker, testConnection } from '../kafka/harness.js';

const ports = { port: 19990, controllerPort: 19991 };
const NAME = 'fixes-read-end';
const TOPIC = 'spa.read-end';
/** A topic of one aborted transaction: nothing but aborted records and the abort marker. */
const ABORTED_TOPIC = 'spa.read-end-aborted';
const PARTITIONS = 3;
const TRANSACTIONS = 6;
const PER_TRANSACTION = 100;
const FROZEN_MS = 3000;

let kafka: KafkaConnection;
let brokerPid: number;
let frozen = false;

const freeze = (): void => {
  process.kill(brokerPid, 'SIGSTOP');
  frozen = true;
};
const thaw = (): void => {
  if (frozen) process.kill(brokerPid, 'SIGCONT');
  frozen = false;
};

beforeAll(async () => {
  const broker = await startTestBroker(NAME, ports);
  if (broker.pid === undefined) throw new Error('the test broker has no pid');
  brokerPid = broker.pid;
  const config = testConnection(broker.brokers);
  kafka = { transport: kafkaTransport(config), config };
  const admin = await kafka.transport.admin();
  try {
    await admin.createTopics([
      { name: TOPIC, partitions: PARTITIONS, replicationFactor: 1, configs: {} },
      { name: ABORTED_TOPIC, partitions: 1, replicationFactor: 1, configs: {} },
    ]);
  } finally {
    await admin.close();
  }
  const sink = await kafka.transport.sink({ transactionalId: 'fixes-read-end' });
  for (let t = 0; t < TRANSACTIONS; t += 1)
    await sink.transaction((tx) =>
      tx.send(
        Array.from({ length: PER_TRANSACTION }, (_, i) => ({
          topic: TOPIC,
          key: null,
          value: Buffer.from(`${t}/${i}`),
          partition: i % PARTITIONS,
        })),
      ),
    );
  await expect(
    sink.transaction(async (tx) => {
      await tx.send([{ topic: ABORTED_TOPIC, key: null, value: Buffer.from('aborted') }]);
      throw new Error('abort');
    }),
  ).rejects.toThrow('abort');
  await sink.close();
}, 240_000);

afterAll(async () => {
  thaw();
  await kafka?.transport.close();
  await stopTestBroker(NAME, ports);
}, 60_000);

it('reads every record when the broker freezes for 3 s right after the join', async () => {
  const read = await readTopic(kafka, { topic: TOPIC, start: { kind: 'earliest' } });
  void read.joined.then(() => {
    freeze();
    setTimeout(thaw, FROZEN_MS);
  });
  const started = Date.now();
  const values = await lastValueFrom(
    read.records.pipe(
      map(({ record, ack }) => (ack(), record.value?.toString() ?? '')),
      toArray(),
    ),
  );
  await read.closed;
  expect(values).toHaveLength(TRANSACTIONS * PER_TRANSACTION);
  expect(new Set(values).size).toBe(TRANSACTIONS * PER_TRANSACTION);
  // The read waited out the freeze: it ended after the broker came back.
  expect(frozen).toBe(false);
  expect(Date.now() - started).toBeGreaterThanOrEqual(FROZEN_MS);
}, 120_000);

it('ends at an aborted transaction, which delivers no record', async () => {
  const read = await readTopic(kafka, { topic: ABORTED_TOPIC, start: { kind: 'earliest' } });
  expect(read.ranges).toEqual([{ partition: 0, start: 0n, end: 2n }]);
  const values = await lastValueFrom(read.records.pipe(toArray()));
  await read.closed;
  expect(values).toEqual([]);
}, 60_000);
