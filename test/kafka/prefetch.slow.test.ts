/**
 * The kafkajs patch's prefetch (infra/kafka/client/README.md#the-kafkajs-patch): while a fetch's
 * batches are handled, the next fetch is already in flight from the offsets those batches end at.
 * Unpatched, kafkajs fetched only once every batch of the last fetch was handled, so the consumer
 * waited a broker round trip (and the fetch's decompression) between fetches. A prefetched batch
 * is handed over only if its partition is still read from where the batch starts: a handler that
 * took fewer records, or a seek, makes it stale, and it is dropped, not delivered. kafkajs is used
 * directly here, with small fetches, so a read takes many of them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import type { Consumer, EachBatchPayload } from 'kafkajs';
import { eventually, startTestBroker, stopTestBroker } from './harness.js';

const ports = { port: 19840, controllerPort: 19841 };
const RECORDS = 60;
const PER_SEND = 5; // one record batch of five records each send
let kafka: Kafka;

beforeAll(async () => {
  const broker = await startTestBroker('prefetch', ports);
  kafka = new Kafka({
    clientId: 'spa-test-prefetch',
    brokers: [...broker.brokers],
    logLevel: logLevel.NOTHING,
  });
});

afterAll(async () => {
  await stopTestBroker('prefetch', ports);
});

/** A one-partition topic of RECORDS records, value = its index, PER_SEND to a record batch. */
async function topicOfRecords(topic: string): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 1 }] });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  for (let at = 0; at < RECORDS; at += PER_SEND)
    await producer.send({
      topic,
      messages: Array.from({ length: PER_SEND }, (_, i) => ({ value: String(at + i) })),
    });
  await producer.disconnect();
}

/** A consumer whose every fetch returns about one record batch. */
async function smallFetchConsumer(topic: string): Promise<Consumer> {
  const consumer = kafka.consumer({ groupId: `${topic}-g`, maxBytesPerPartition: 64, maxWaitTimeInMs: 100 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  return consumer;
}

const valuesOf = (payload: EachBatchPayload): number[] => payload.batch.messages.map((m) => Number(m.value));

describe('kafkajs prefetch', () => {
  it('has the next fetch in flight while a batch is handled, and delivers every record once in order', async () => {
    await topicOfRecords('pf-overlap');
    const consumer = await smallFetchConsumer('pf-overlap');
    let handling = false;
    let fetchesWhileHandling = 0; // fetches that came back while a batch was being handled
    consumer.on(consumer.events.FETCH, () => void (handling && fetchesWhileHandling++));
    const seen: number[] = [];
    await consumer.run({
      eachBatch: async (payload) => {
        handling = true;
        seen.push(...valuesOf(payload));
        await new Promise((resolve) => setTimeout(resolve, 20));
        handling = false;
      },
    });
    await eventually(() => seen.length >= RECORDS, 60_000, `${RECORDS} records`);
    await consumer.disconnect();
    expect(seen).toEqual(Array.from({ length: RECORDS }, (_, i) => i));
    expect(fetchesWhileHandling).toBeGreaterThan(RECORDS / PER_SEND / 2);
  });

  it('a handler that takes the first record of each batch gets every record once, in order', async () => {
    await topicOfRecords('pf-short');
    const consumer = await smallFetchConsumer('pf-short');
    const seen: number[] = [];
    await consumer.run({
      eachBatchAutoResolve: false,
      eachBatch: async (payload) => {
        const [first] = payload.batch.messages;
        if (!first) return;
        seen.push(Number(first.value));
        payload.resolveOffset(first.offset); // the rest of the batch is fetched again
        await new Promise((resolve) => setTimeout(resolve, 5));
      },
    });
    await eventually(() => seen.length >= RECORDS, 60_000, `${RECORDS} records`);
    await consumer.disconnect();
    expect(seen).toEqual(Array.from({ length: RECORDS }, (_, i) => i));
  });

  it('after a seek, the next batch starts at the sought offset, not at the prefetched one', async () => {
    await topicOfRecords('pf-seek');
    const consumer = await smallFetchConsumer('pf-seek');
    const seen: number[] = [];
    let sought = false;
    await consumer.run({
      eachBatch: async (payload) => {
        seen.push(...valuesOf(payload));
        await new Promise((resolve) => setTimeout(resolve, 20)); // the prefetch has come back
        if (!sought && seen.length >= 20) {
          sought = true;
          consumer.seek({ topic: 'pf-seek', partition: 0, offset: '3' });
        }
      },
    });
    await eventually(() => seen.length >= 20 + RECORDS - 3, 60_000, 'the records after the seek');
    await consumer.disconnect();
    const at = seen.indexOf(3, 4);
    expect(seen.slice(0, at)).toEqual(Array.from({ length: at }, (_, i) => i));
    expect(seen.slice(at, at + RECORDS - 3)).toEqual(Array.from({ length: RECORDS - 3 }, (_, i) => i + 3));
  });
});
