/**
 * The Kafka anchor of bench/kafka.ts against a real broker: Kafka's Java producer sends exactly
 * the records it is given (binary keys, values and headers, a null key, bytes a delimited
 * `--payload-file` would split on), to the topics it is given, once per round; its consumer
 * reads them all back and counts the same records and bytes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { javaConsumer, javaProducer, writeTransactions } from '../../bench/kafka-anchor.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import type { OutgoingRecord } from '../../infra/kafka/client/transport.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import type { KafkaConnection } from '../../streams/kafka/consume-spa.js';
import { startTestBroker, stopTestBroker, testConnection } from '../kafka/harness.js';
import { readCommitted } from '../kafka/read-records.js';

const ports = { port: 19972, controllerPort: 19973 };
/** 2 warm-up rounds + 3 timed rounds, each sending every record once. */
const ROUNDS = 5;

let kafka: KafkaConnection;
let dir: string;

beforeAll(async () => {
  const { brokers } = await startTestBroker('bench-anchor', ports);
  const config = testConnection(brokers);
  kafka = { transport: kafkaTransport(config), config };
  dir = mkdtempSync(join(tmpdir(), 'spa-anchor-test-'));
});

afterAll(async () => {
  await kafka?.transport.close();
  rmSync(dir, { recursive: true, force: true });
  await stopTestBroker('bench-anchor', ports);
});

/** Every byte value, and the separators a text payload file would cut records at. */
const binary = (seed: number, length: number): Buffer =>
  Buffer.from(Array.from({ length }, (_, i) => (seed * 31 + i * 7) % 256));

const source = (topic: string, i: number): OutgoingRecord => ({
  topic: `src.${topic}`,
  key: i === 0 ? null : Buffer.from(`key-${i}\n`),
  value: binary(i, 300 + i),
  headers: { fingerprint: binary(i + 1, 8), 'empty\n': Buffer.alloc(0) },
});

const transactions: OutgoingRecord[][] = [
  [source('a', 0), source('b', 1), source('a', 2)],
  [source('a', 3)],
  [source('b', 4), source('a', 5), source('a', 6), source('b', 7)],
];

const described = (r: {
  key: Buffer | null;
  value: Buffer | null;
  headers?: Readonly<Record<string, Buffer>>;
}): string =>
  JSON.stringify([
    r.key?.toString('hex') ?? null,
    r.value?.toString('hex'),
    Object.entries(r.headers ?? {})
      .map(([name, value]) => [name, value.toString('hex')])
      .sort(),
  ]);

describe('the Java anchor', () => {
  it('produces exactly the given records in every round, and consumes them all', async () => {
    await applyTopicsTo(
      kafka.config.brokers,
      ['java.a', 'java.b'].map((name) => ({
        role: 'trajectories' as const,
        name,
        partitions: 3,
        configs: { 'compression.type': 'gzip' },
      })),
      kafka.config,
    );
    const file = join(dir, 'records.bin');
    writeTransactions(file, transactions, 'src.');

    const produced = await javaProducer(kafka.config.brokers, {
      file,
      topicPrefix: 'java.',
      compression: 'gzip',
    });
    const all = transactions.flat();
    expect(produced.records).toBe(all.length);
    expect(produced.bytes).toBe(all.reduce((n, r) => n + (r.key?.length ?? 0) + r.value!.length, 0));

    for (const topic of ['a', 'b']) {
      const sent = all.filter((r) => r.topic === `src.${topic}`).map(described);
      const expected = Array.from({ length: ROUNDS }, () => sent)
        .flat()
        .sort();
      const read = await readCommitted(kafka, `java.${topic}`, described, expected.length);
      expect(read.sort()).toEqual(expected);
    }

    const consumed = await javaConsumer(kafka.config.brokers, { topic: 'java.a', records: 5 * ROUNDS });
    expect(consumed.records).toBe(5 * ROUNDS);
    expect(consumed.seconds).toBeGreaterThan(0);
  });

  it('says which topic a record is not under instead of writing a wrong file', () => {
    expect(() =>
      writeTransactions(join(dir, 'x.bin'), [[{ ...source('a', 1), topic: 'other.a' }]], 'src.'),
    ).toThrow('record topic other.a is not under src.');
  });
});
