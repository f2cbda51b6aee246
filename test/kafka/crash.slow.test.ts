import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killBroker, startBroker } from '../../infra/kafka/broker.js';
import { waitForLeaders } from '../../infra/kafka/topics.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import type { ConsumedRecord, KafkaTransport, OutgoingRecord } from '../../infra/kafka/client/transport.js';
import { eventually, startTestBroker, stopTestBroker, testConnection } from './harness.js';

const ports = { port: 19192, controllerPort: 19193 };
const total = 3000;
const batchSize = 50;
/** Acknowledged records when the broker is killed. */
const killAt = 1000;
let brokers: readonly string[];

beforeAll(async () => {
  brokers = (await startTestBroker('crash', ports)).brokers;
});

afterAll(async () => {
  await stopTestBroker('crash', ports);
});

// One broker, killed and restarted once under the producer.
describe('idempotent producer across a kill -9 of the broker', () => {
  const topic = 'crash';
  let transport: KafkaTransport;

  beforeAll(async () => {
    // Patient retries (~40 s of backoff): the producer must ride out the broker's restart.
    transport = kafkaTransport(
      testConnection(brokers, { retry: { retries: 12, initialRetryTimeMs: 200, maxRetryTimeMs: 4000 } }),
    );
    const admin = await transport.admin();
    await admin.createTopics([{ name: topic, partitions: 3, replicationFactor: 1, configs: {} }]);
    await waitForLeaders(admin, [topic]);
    await admin.close();
  });

  afterAll(async () => {
    await transport?.close();
  });

  it('loses no record and duplicates none when the broker is SIGKILLed mid-production and restarted', async () => {
    const sink = await transport.sink();
    let failedAttempts = 0;
    let killing: Promise<unknown> | undefined;
    const produce = async (): Promise<void> => {
      for (let first = 0; first < total; first += batchSize) {
        // The kill starts from inside the loop, racing the next send, so it lands mid-production
        // however fast the machine is.
        if (first === killAt) killing = killBroker({ ...ports, name: 'test-crash' });
        const batch: OutgoingRecord[] = Array.from({ length: batchSize }, (_, i) => ({
          topic,
          key: Buffer.from(`episode-${(first + i) % 17}`),
          value: Buffer.from(String(first + i)),
        }));
        // The application retries a batch the client gave up on; idempotence makes that safe.
        for (;;) {
          try {
            await sink.send(batch);
            break;
          } catch {
            failedAttempts += 1;
            if (failedAttempts > 20) throw new Error('producer kept failing after the broker restart');
          }
        }
      }
    };
    const production = produce();
    await eventually(() => killing !== undefined, 60_000, `${killAt} acknowledged records`);
    await killing;
    await startBroker({ ...ports, name: 'test-crash', startTimeoutMs: 180_000, log: () => {} });
    await production;
    console.info(
      `[crash] killed after ${killAt} acknowledged records; ${failedAttempts} batch sends failed and were retried`,
    );

    const source = await transport.source({
      groupId: 'crash-check',
      topics: [topic],
      start: { kind: 'earliest' },
    });
    const records: ConsumedRecord[] = [];
    await source.run(async (batch) => void records.push(...batch.records));
    await eventually(() => records.length >= total, 60_000, `${total} records`);
    await new Promise((resolve) => setTimeout(resolve, 1000)); // room for any duplicate to show up
    await source.close();
    const ids = records.map((r) => Number(r.value?.toString()));
    expect(records).toHaveLength(total);
    expect(new Set(ids).size).toBe(total);
    expect(Math.min(...ids)).toBe(0);
    expect(Math.max(...ids)).toBe(total - 1);
  });
});
