/**
 * The kafkajs implementation of {@link RecordSink}: an idempotent producer (acks=all, one
 * request in flight so retries keep order and sequence numbers), optionally transactional. Each
 * send is cut into requests whose batches fit their topics' `max.message.bytes` (record-size.ts),
 * read once per topic and sink.
 */
import { CompressionTypes, Partitioners } from 'kafkajs';
import type { Kafka, Message, Producer, RecordMetadata, TopicMessages } from 'kafkajs';
import type { KafkaConnectionConfig } from './config.js';
import { describeKafkaError } from './kafkajs-client.js';
import { toKafkajsHeaders } from './kafkajs-headers.js';
import { isTransientBrokerError } from './retriable.js';
import { topicLimits, type TopicLimits } from './topic-limits.js';
import { batchBytesAlone, chunkWithinLimits, type BatchCompression } from './record-size.js';
import { CommitOutcomeUnknown, retryTransaction, serialized } from './transaction-retry.js';
import {
  RecordTooLargeError,
  type OutgoingRecord,
  type OversizedRecord,
  type PartitionWrite,
  type RecordSink,
  type SinkOptions,
  type SinkTransaction,
  type TopicPartitionOffset,
} from './transport.js';

function toTopicMessages(records: readonly OutgoingRecord[]): TopicMessages[] {
  const byTopic = new Map<string, Message[]>();
  for (const record of records) {
    const message: Message = {
      key: record.key,
      value: record.value,
      headers: toKafkajsHeaders(record.headers),
      ...(record.timestamp === undefined ? {} : { timestamp: String(record.timestamp) }),
      ...(record.partition === undefined ? {} : { partition: record.partition }),
    };
    const list = byTopic.get(record.topic) ?? [];
    list.push(message);
    byTopic.set(record.topic, list);
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}

function toWrites(metadata: readonly RecordMetadata[]): PartitionWrite[] {
  return metadata.map((m) => ({
    topic: m.topicName,
    partition: m.partition,
    baseOffset: BigInt(m.baseOffset ?? '-1'),
  }));
}

function toKafkajsOffsets(offsets: readonly TopicPartitionOffset[]) {
  const byTopic = new Map<string, { partition: number; offset: string }[]>();
  for (const { topic, partition, offset } of offsets)
    byTopic.set(topic, [...(byTopic.get(topic) ?? []), { partition, offset: offset.toString() }]);
  return [...byTopic].map(([topic, partitions]) => ({ topic, partitions }));
}

/**
 * Retries of a producer's sends: kafkajs' own default for an idempotent producer (no limit on
 * the count, so sequence numbers are never given up on; each wait capped at the client's
 * `retry.maxRetryTimeMs`), with a 20 ms first wait instead of the client's
 * `retry.initialRetryTimeMs` (300 ms by default). Right after a commit the coordinator is still
 * writing the previous transaction's markers and answers the next transaction's
 * AddPartitionsToTxn with CONCURRENT_TRANSACTIONS for a few ms; waiting 300 ms for that capped
 * a sink that always had its next transaction ready at ~7 transactions/s
 * (docs/experiments/2026-11-25-kafka-throughput-levers.md).
 */
const PRODUCER_SEND_RETRY = { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 20 };

/** A kafkajs `sendBatch` (a producer's or a transaction's). */
type SendBatch = (batch: {
  topicMessages: TopicMessages[];
  acks: -1;
  compression: CompressionTypes;
}) => Promise<RecordMetadata[]>;

/** Kafka's default partitioner (murmur2 of the key, as kafkajs' and the Java client's). */
const defaultPartitioner = Partitioners.DefaultPartitioner();
const partitionListings = new Map<number, { partitionId: number; leader: number }[]>();
const listing = (count: number) => {
  let partitions = partitionListings.get(count);
  if (!partitions)
    partitionListings.set(
      count,
      (partitions = Array.from({ length: count }, (_, id) => ({ partitionId: id, leader: 0 }))),
    );
  return partitions;
};

/**
 * A keyed record with the partition kafkajs' default partitioner would give it, so a send is cut
 * by each partition's batch rather than each topic's share of a request (record-size.ts): a
 * transaction's records then go in one request instead of two or three, one after another.
 * Unkeyed records, placed ones and topics whose partition count is unknown are left as they are.
 */
function placed(record: OutgoingRecord, partitions: number | undefined): OutgoingRecord {
  if (record.partition !== undefined || record.key === null || partitions === undefined) return record;
  const partition = defaultPartitioner({
    topic: record.topic,
    partitionMetadata: listing(partitions) as never,
    message: { key: record.key, value: null },
  });
  return { ...record, partition };
}

/** Sends cut to fit each topic's limit (record-size.ts), and the records that cannot fit at all. */
function limitedSends(limits: TopicLimits, codec: BatchCompression) {
  const compression = codec === 'none' ? CompressionTypes.None : CompressionTypes.GZIP;
  const oversized = async (records: readonly OutgoingRecord[]): Promise<OversizedRecord[]> => {
    const limitOf = await limits.of(records.map((r) => r.topic));
    return records.flatMap((record, index) => {
      const limit = limitOf(record.topic);
      const bytes = batchBytesAlone(record, codec, limit);
      return bytes > limit ? [{ index, topic: record.topic, bytes, limit }] : [];
    });
  };
  /** Sends `records` as requests whose batches fit; nothing at all when one cannot fit. */
  const sendWithin = async (records: readonly OutgoingRecord[], sendBatch: SendBatch) => {
    const tooLarge = await oversized(records);
    if (tooLarge.length > 0) throw new RecordTooLargeError(tooLarge);
    const limitOf = await limits.of(records.map((r) => r.topic));
    const placedRecords = records.map((r) => placed(r, limits.partitions(r.topic)));
    const writes: PartitionWrite[] = [];
    for (const chunk of chunkWithinLimits(placedRecords, limitOf, codec))
      writes.push(
        ...toWrites(await sendBatch({ topicMessages: toTopicMessages(chunk), acks: -1, compression })),
      );
    return writes;
  };
  return { oversized, sendWithin };
}

/** Connects an idempotent (and, with `transactionalId`, transactional) producer. */
export async function createKafkajsSink(
  kafka: Kafka,
  config: KafkaConnectionConfig,
  options: SinkOptions = {},
): Promise<RecordSink> {
  const transactional = options.transactionalId !== undefined;
  if (config.retry.retries < 1)
    throw new Error(
      'retry.retries=0: an idempotent sink needs retries >= 1 to resend with the same sequence numbers',
    );
  const openProducer = async (): Promise<Producer> => {
    const opened = kafka.producer({
      idempotent: true,
      // Idempotence needs ordered retries: one request in flight per connection.
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      retry: PRODUCER_SEND_RETRY,
      ...(transactional ? { transactionalId: options.transactionalId } : {}),
    });
    try {
      await opened.connect();
    } catch (error) {
      throw describeKafkaError(error, 'connecting a producer', config);
    }
    return opened;
  };
  let producer = await openProducer();
  // Set when an abort or a commit failed past its retries: kafkajs then refuses every new
  // transaction on that producer, so the next attempt replaces it first. The new producer's
  // InitProducerId fences the old epoch; the coordinator ends the dangling transaction.
  let producerStuck = false;
  const replaceStuckProducer = async (): Promise<void> => {
    if (!producerStuck) return;
    await producer.disconnect().catch(() => undefined);
    producer = await openProducer();
    producerStuck = false;
  };
  const { oversized, sendWithin } = limitedSends(topicLimits(kafka, config), options.compression ?? 'gzip');
  // Transactions on one producer must not interleave; chain them (block, never buffer records).
  const lane = serialized();

  const transaction = <T>(work: (tx: SinkTransaction) => Promise<T>): Promise<T> => {
    if (!transactional)
      return Promise.reject(
        new Error('RecordSink.transaction needs SinkOptions.transactionalId; this sink has none'),
      );
    const attempt = async (): Promise<T> => {
      await replaceStuckProducer();
      const tx = await producer.transaction();
      let result: T;
      try {
        result = await work({
          send: (records) => sendWithin(records, (batch) => tx.sendBatch(batch)),
          sendOffsets: (groupId, offsets) =>
            tx.sendOffsets({ consumerGroupId: groupId, topics: toKafkajsOffsets(offsets) }),
        });
      } catch (error) {
        if (tx.isActive()) await tx.abort().catch(() => (producerStuck = true));
        throw error;
      }
      try {
        // EndTxn is retried inside kafkajs (patches/kafkajs+2.2.4.patch); past that, the outcome is unknown.
        await tx.commit();
      } catch (error) {
        producerStuck = true;
        const doing = 'committing a transaction (not retried: its records may or may not be visible)';
        throw new CommitOutcomeUnknown(describeKafkaError(error, doing, config));
      }
      return result;
    };
    const run = (): Promise<T> =>
      retryTransaction(attempt, config.retry, isTransientBrokerError, (error) =>
        describeKafkaError(error, 'running a transaction', config),
      );
    return lane(run);
  };

  return {
    async send(records) {
      if (records.length === 0) return [];
      // A transactional producer may only write inside a transaction: make the batch one.
      if (transactional) return transaction((tx) => tx.send(records));
      try {
        return await sendWithin(records, (batch) => producer.sendBatch(batch));
      } catch (error) {
        if (error instanceof RecordTooLargeError) throw error;
        throw describeKafkaError(error, `producing ${records.length} records`, config);
      }
    },
    oversized,
    transaction,
    async close() {
      await lane(async () => undefined);
      await producer.disconnect();
    },
  };
}
