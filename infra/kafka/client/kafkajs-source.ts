/**
 * The kafkajs implementation of {@link RecordSource}: one consumer-group member reading
 * read_committed, offsets committed only explicitly, starting positions written to the group
 * before it joins (like kafka-consumer-groups --reset-offsets) so they hold deterministically.
 */
import type { Admin, Consumer, EachBatchPayload, Kafka, KafkaMessage } from 'kafkajs';
import type { KafkaConnectionConfig } from './config.js';
import { describeKafkaError } from './kafkajs-client.js';
import { fromKafkajsHeaders } from './kafkajs-headers.js';
import { isTransientBrokerError, retryWhileRetriable } from './retriable.js';
import type {
  BatchHandler,
  ConsumedRecord,
  RecordSource,
  SourceOptions,
  StartPosition,
  TopicPartition,
  TopicPartitionOffset,
} from './transport.js';

async function startOffsets(
  admin: Admin,
  topic: string,
  start: StartPosition,
): Promise<{ partition: number; offset: string }[] | undefined> {
  switch (start.kind) {
    case 'committed':
      return undefined;
    case 'earliest':
    case 'latest': {
      const offsets = await admin.fetchTopicOffsets(topic);
      return offsets.map((o) => ({
        partition: o.partition,
        offset: start.kind === 'earliest' ? o.low : o.high,
      }));
    }
    case 'timestamp':
      // kafkajs substitutes the high watermark where no record is that recent.
      return admin.fetchTopicOffsetsByTimestamp(topic, start.timestamp);
    case 'offsets':
      return start.offsets
        .filter((o) => o.topic === topic)
        .map((o) => ({ partition: o.partition, offset: o.offset.toString() }));
  }
}

/** Writes the group's committed offsets for the requested start (the group must be idle). */
async function applyStart(kafka: Kafka, options: SourceOptions, start: StartPosition): Promise<void> {
  if (start.kind === 'committed') return;
  const admin = kafka.admin();
  await admin.connect();
  try {
    for (const topic of options.topics) {
      const partitions = await startOffsets(admin, topic, start);
      if (partitions && partitions.length > 0)
        await admin.setOffsets({ groupId: options.groupId, topic, partitions });
    }
  } finally {
    await admin.disconnect();
  }
}

function toRecord(topic: string, partition: number, message: KafkaMessage): ConsumedRecord {
  return {
    topic,
    partition,
    offset: BigInt(message.offset),
    key: message.key,
    value: message.value,
    headers: fromKafkajsHeaders(message.headers),
    timestamp: Number(message.timestamp),
  };
}

function byTopic(partitions: readonly TopicPartition[]): { topic: string; partitions: number[] }[] {
  const grouped = new Map<string, number[]>();
  for (const { topic, partition } of partitions)
    grouped.set(topic, [...(grouped.get(topic) ?? []), partition]);
  return [...grouped].map(([topic, list]) => ({ topic, partitions: list }));
}

async function deliver(
  payload: EachBatchPayload,
  handler: BatchHandler,
  onFetched: SourceOptions['onFetched'],
): Promise<void> {
  const { batch } = payload;
  const records = batch.messages.map((m) => toRecord(batch.topic, batch.partition, m));
  const outcome = await handler({
    topic: batch.topic,
    partition: batch.partition,
    records,
    highWatermark: BigInt(batch.highWatermark),
  });
  const taken = outcome === undefined ? records.length : outcome.taken;
  if (!Number.isInteger(taken) || taken < 0 || taken > records.length)
    throw new Error(
      `batch handler took ${taken} of ${records.length} records; expected 0..${records.length}`,
    );
  // Only taken records are resolved: kafkajs fetches again from the first untaken one.
  const last = records[taken - 1];
  if (taken === records.length && records.length > 0) {
    payload.resolveOffset(batch.lastOffset());
    onFetched?.({ topic: batch.topic, partition: batch.partition, offset: BigInt(batch.lastOffset()) + 1n });
  } else if (last) payload.resolveOffset(last.offset.toString());
  await payload.heartbeat();
}

/**
 * Tells `options` what the consumer's events say: assignments, batches of no record, and the
 * connection lost and regained (`restarts` tells a crash the consumer restarts from).
 */
function reportEvents(
  consumer: Consumer,
  options: SourceOptions,
  restarts: (crash: { restart: boolean; error: Error }) => boolean,
): void {
  // A crash the consumer restarts from (kafkajs' or `run`'s restart below) is a lost connection
  // until it has joined again.
  let lost = false;
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (!restarts(payload) || lost) return;
    lost = true;
    options.onConnection?.('lost');
  });
  // Emitted after every join and sync, before the first fetch (a seek made in it holds).
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    options.onAssigned?.(
      Object.entries(payload.memberAssignment).flatMap(([topic, partitions]) =>
        partitions.map((partition) => ({ topic, partition })),
      ),
    );
    if (!lost) return;
    lost = false;
    options.onConnection?.('regained');
  });
  // kafkajs hands a batch of only markers or aborted records to no handler; it moves past it
  // and reports it here, with no record in it.
  consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
    if (payload.batchSize === 0)
      options.onFetched?.({
        topic: payload.topic,
        partition: payload.partition,
        offset: BigInt(payload.lastOffset) + 1n,
      });
  });
}

/** Creates a source; it joins the group when `run` is called. */
export async function createKafkajsSource(
  kafka: Kafka,
  config: KafkaConnectionConfig,
  options: SourceOptions,
): Promise<RecordSource> {
  if (options.topics.length === 0) throw new Error(`source for group "${options.groupId}" names no topics`);
  const start = options.start ?? { kind: 'committed', fallback: 'earliest' };
  let closing = false;
  let restart: NodeJS.Timeout | undefined;
  const consumer: Consumer = kafka.consumer({
    groupId: options.groupId,
    readUncommitted: false,
    allowAutoTopicCreation: false,
    maxBytesPerPartition: options.maxBytesPerPartition ?? 1 << 20,
    maxWaitTimeInMs: 250,
    // A request's total (kafkajs' default is 10 MB): room for every partition's
    // maxBytesPerPartition of a 6-partition topic read at 4 MiB (consume-spa.ts).
    maxBytes: 32 << 20,
    // kafkajs' own consumer retries (5), and no restart once closing: a crash while close() waits
    // for a broker that is down would otherwise restart the consumer after it was stopped, and it
    // would go on retrying (and, once the broker is back, consuming) for good.
    retry: { retries: 5, restartOnFailure: () => Promise.resolve(!closing) },
  });
  const restarts = ({ restart, error }: { restart: boolean; error: Error }) =>
    !closing && (restart || isTransientBrokerError(error));
  reportEvents(consumer, options, restarts);
  try {
    await retryWhileRetriable(() => applyStart(kafka, options, start), 10_000);
    await consumer.connect();
    await consumer.subscribe({
      topics: [...options.topics],
      fromBeginning: start.kind !== 'committed' || start.fallback === 'earliest',
    });
  } catch (error) {
    await consumer.disconnect().catch(() => undefined);
    throw describeKafkaError(error, `starting consumer group "${options.groupId}"`, config);
  }
  return {
    async run(handler, onFatal) {
      const run = () =>
        consumer.run({
          autoCommit: false,
          eachBatchAutoResolve: false,
          eachBatch: (payload) => deliver(payload, handler, options.onFetched),
        });
      consumer.on(consumer.events.CRASH, ({ payload }) => {
        if (payload.restart || closing) return;
        if (!restarts(payload)) {
          onFatal?.(describeKafkaError(payload.error, 'consuming', config));
          return;
        }
        // kafkajs restarts only from errors it marks retriable; a group coordinator still loading
        // after a broker restart outlasts its retries as a non-retriable one. Restarted here as
        // kafkajs restarts its own (it has stopped the consumer), so the read rejoins and resumes.
        restart = setTimeout(() => void run(), config.retry.initialRetryTimeMs);
      });
      await run();
    },
    pause: (partitions) => consumer.pause(byTopic(partitions)),
    resume: (partitions) => consumer.resume(byTopic(partitions)),
    seek: ({ topic, partition, offset }) => consumer.seek({ topic, partition, offset: offset.toString() }),
    async commit(offsets: readonly TopicPartitionOffset[]) {
      await consumer.commitOffsets(offsets.map((o) => ({ ...o, offset: o.offset.toString() })));
    },
    async close() {
      closing = true;
      clearTimeout(restart);
      await consumer.disconnect();
      if (options.ephemeral) await deleteGroup(kafka, options.groupId);
    },
  };
}

/** Deletes a stopped throwaway group so it does not linger in `spa topics`; best effort. */
async function deleteGroup(kafka: Kafka, groupId: string): Promise<void> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    await admin.deleteGroups([groupId]);
  } catch {
    // Already gone, or the broker is going away: nothing more to clean up.
  } finally {
    await admin.disconnect();
  }
}
