/**
 * The @platformatic/kafka implementation of {@link RecordSink}, with the guarantees of the kafkajs
 * sink (kafkajs-sink.ts): an idempotent producer (the library then forces acks=all and one
 * request in flight per connection), optionally transactional, keys partitioned as kafkajs does.
 * Every producer call of a sink runs one at a time: the library numbers a partition's records
 * when a send succeeds and shares one in-flight AddPartitionsToTxn or TxnOffsetCommit between
 * concurrent callers, so overlapping calls would reuse sequence numbers or skip a partition.
 */
import {
  CompressionAlgorithms,
  GenericError,
  kOptions,
  kPerformWithRetry,
  Producer,
  ProduceAcks,
} from '@platformatic/kafka';
import type { Consumer, Message, ProduceResult, ProducerOptions } from '@platformatic/kafka';
import type { KafkaConnectionConfig } from '../../infra/kafka/client-config.js';
import {
  describePlatformaticError,
  isPlatformaticRetriable,
  platformaticBaseOptions,
  platformaticErrorHas,
} from '../../infra/kafka/platformatic-client.js';
import { kafkajsCompatiblePartitioner, toPlatformaticMessages } from './platformatic-records.js';
import { CommitOutcomeUnknown, retryTransaction, serialized } from './transaction-retry.js';
import type {
  PartitionWrite,
  RecordSink,
  SinkOptions,
  SinkTransaction,
  TopicPartitionOffset,
} from './transport.js';

/**
 * The first retry of a producer request waits 20 ms, the rest follow the config's backoff: right
 * after a commit the coordinator answers the next AddPartitionsToTxn with CONCURRENT_TRANSACTIONS
 * for a few ms (the reason kafkajs-sink.ts starts at 20 ms too).
 */
const FIRST_RETRY_MS = 20;

/** The library's transaction handle (its class is not exported by name). */
type Transaction = Awaited<ReturnType<Producer['beginTransaction']>>;

/** The transaction timeout the coordinator enforces (the library sends its `timeout` option), kafkajs' default. */
const TRANSACTION_TIMEOUT_MS = 60_000;

/** Set on an error of the library's when it could not connect to the transaction coordinator. */
export const COORDINATOR_UNREACHABLE = 'spaCoordinatorUnreachable';

/**
 * A producer whose requests retry `retries` times, as the options say and as kafkajs' do:
 *
 * - The library turns an idempotent producer's `retries` of 1 or fewer into
 *   Number.MAX_SAFE_INTEGER, so a sink configured for one retry retried forever, a refused SASL
 *   login included (found by sasl.slow.test.ts on this client); the count is set back once the
 *   producer is constructed.
 * - A transaction's requests (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn) connect
 *   to the coordinator through a step that is retried `retries` times of its own, inside each of
 *   the request's `retries` tries: with the coordinator's broker dead, a request took retries²
 *   backoffs to fail (~6 min at 12 retries), while the library never looks the coordinator up
 *   again and the sink's remedy, a new producer that does, waited (found by cluster-fault.slow on
 *   this client: the generator stalled after the coordinator was SIGKILLed). That connection step
 *   now makes one try, and the request around it is retried as before; its error is marked
 *   {@link COORDINATOR_UNREACHABLE}.
 */
export function producerWithRetries(
  options: ProducerOptions<Buffer, Buffer, Buffer, Buffer>,
  retries: number,
): Producer<Buffer, Buffer, Buffer, Buffer> {
  const producer = new Producer(options);
  producer[kOptions].retries = retries;
  const perform = producer[kPerformWithRetry].bind(producer);
  producer[kPerformWithRetry] = (operationId, operation, callback, attempt, errors, shouldSkipRetry) => {
    if (operationId !== 'getCoordinatorConnection')
      return perform(operationId, operation, callback, attempt, errors, shouldSkipRetry);
    const tagged = ((error: Error | null, result: unknown) => {
      if (error) Object.defineProperty(error, COORDINATOR_UNREACHABLE, { value: true, configurable: true });
      (callback as (error: Error | null, result: unknown) => void)(error, result);
    }) as typeof callback;
    return perform(operationId, operation, tagged, attempt, errors, () => true);
  };
  return producer;
}

/** Finds the coordinator (node id) of a consumer group, for a transaction's offset commit. */
export type GroupCoordinatorLookup = (groupId: string) => Promise<number>;

function toWrites(result: ProduceResult): PartitionWrite[] {
  return (result.offsets ?? []).map(({ topic, partition, offset }) => ({
    topic,
    partition,
    baseOffset: offset,
  }));
}

/**
 * Commits `offsets` for `groupId` inside `transaction`: AddOffsetsToTxn once per group, then one
 * TxnOffsetCommit per partition. The library commits a consumed message's offset + 1 on behalf of
 * one of its own consumers; here the group is any group (no member, generation -1, which the
 * coordinator accepts for a group without members), so a message-shaped position is made for it.
 */
async function sendTransactionOffsets(
  transaction: Transaction,
  coordinatorId: number,
  groupId: string,
  offsets: readonly TopicPartitionOffset[],
): Promise<void> {
  // The library reads only `groupId` off the consumer it is given.
  await transaction.addConsumer({ groupId } as Consumer);
  for (const { topic, partition, offset } of offsets) {
    const position = {
      topic,
      partition,
      offset: offset - 1n,
      metadata: { consumer: { groupId, generationId: -1, memberId: '', coordinatorId } },
    } as unknown as Message;
    await transaction.addOffset(position);
  }
}

/** Connects an idempotent (and, with `transactionalId`, transactional) producer. */
export async function createPlatformaticSink(
  config: KafkaConnectionConfig,
  groupCoordinator: GroupCoordinatorLookup,
  options: SinkOptions = {},
): Promise<RecordSink> {
  const transactional = options.transactionalId !== undefined;
  if (config.retry.retries < 1)
    throw new Error(
      'retry.retries=0: an idempotent sink needs retries >= 1 to resend with the same sequence numbers',
    );
  const compression =
    options.compression === 'none' ? CompressionAlgorithms.NONE : CompressionAlgorithms.GZIP;
  // `describe`: the sink's first producer reports in our terms; a replacement inside a transaction
  // attempt throws the library's error, so the attempt is retried when it is retriable (a
  // coordinator still moving) and described only if it gives up (retryTransaction's giveUp).
  const openProducer = async (describe: boolean): Promise<Producer> => {
    const opened = producerWithRetries(
      {
        ...platformaticBaseOptions(config, FIRST_RETRY_MS),
        idempotent: true,
        acks: ProduceAcks.ALL,
        compression,
        partitioner: kafkajsCompatiblePartitioner(),
        timeout: TRANSACTION_TIMEOUT_MS,
        // InitProducerId as a new producer (-1/-1, as the Java client sends). The library's default,
        // producer 0 epoch 0, asks to bump an epoch it never had: a restarted process gets
        // PRODUCER_FENCED for a transactional id that exists already.
        producerId: -1n,
        producerEpoch: -1,
        ...(transactional ? { transactionalId: options.transactionalId } : {}),
      },
      config.retry.retries,
    );
    try {
      // Registers the producer id now, as kafkajs' connect does: a dead cluster fails here, and a
      // transactional id fences its previous producer (the coordinator aborts its open transaction).
      if (transactional) await (await opened.beginTransaction()).cancel();
      else await opened.initIdempotentProducer({});
    } catch (error) {
      await opened.close().catch(() => undefined);
      throw describe ? describePlatformaticError(error, 'connecting a producer', config) : error;
    }
    return opened;
  };
  let producer = await openProducer(true);
  // Set when an attempt failed on the client's side of a transaction: the library keeps the
  // failed transaction (and a coordinator it never looks up again), so the next attempt starts on
  // a new producer, whose InitProducerId fences the old epoch and ends the dangling transaction.
  let producerStale = false;
  const replaceStaleProducer = async (): Promise<void> => {
    if (!producerStale) return;
    await producer.close().catch(() => undefined);
    producer = await openProducer(false);
    producerStale = false;
  };
  const oneAtATime = serialized();
  // Transactions on one producer must not interleave; chain them (block, never buffer records).
  const lane = serialized();

  const transaction = <T>(work: (tx: SinkTransaction) => Promise<T>): Promise<T> => {
    if (!transactional)
      return Promise.reject(
        new Error('RecordSink.transaction needs SinkOptions.transactionalId; this sink has none'),
      );
    const attempt = async (): Promise<T> => {
      await replaceStaleProducer();
      let tx: Transaction;
      try {
        tx = await producer.beginTransaction();
      } catch (error) {
        // The library keeps a transaction that failed to begin as the active one.
        producerStale = true;
        throw error;
      }
      // Kafka refuses EndTxn for a transaction that added nothing, so an empty one ends locally.
      let added = false;
      let result: T;
      try {
        result = await work({
          send: (records) =>
            oneAtATime(async () => {
              if (records.length === 0) return [];
              added = true;
              return toWrites(await tx.send({ messages: toPlatformaticMessages(records) }));
            }),
          sendOffsets: (groupId, offsets) =>
            oneAtATime(async () => {
              if (offsets.length === 0) return;
              const coordinatorId = await groupCoordinator(groupId);
              added = true;
              await sendTransactionOffsets(tx, coordinatorId, groupId, offsets);
            }),
        });
      } catch (error) {
        // The library never looks the coordinator up again, so an abort after the coordinator
        // could not be reached would spend every retry on the same broker; the next attempt's
        // producer ends the transaction instead (its InitProducerId aborts it).
        if (!tx.completed && added && platformaticErrorHas(error, COORDINATOR_UNREACHABLE, true))
          producerStale = true;
        else if (!tx.completed) {
          const end = added ? tx.abort() : tx.cancel();
          await end.catch(() => (producerStale = true));
        }
        if (isPlatformaticRetriable(error)) producerStale = true;
        throw error;
      }
      if (!added) {
        await tx.cancel();
        return result;
      }
      try {
        // EndTxn is retried inside the library (retries, backoff); past that, the outcome is unknown.
        await tx.commit();
      } catch (error) {
        producerStale = true;
        const doing = 'committing a transaction (not retried: its records may or may not be visible)';
        throw new CommitOutcomeUnknown(describePlatformaticError(error, doing, config));
      }
      return result;
    };
    const run = (): Promise<T> =>
      retryTransaction(attempt, config.retry, isPlatformaticRetriable, (error) =>
        // The caller's own error is rethrown as it was thrown; a library error says what failed.
        error instanceof Error && GenericError.isGenericError(error)
          ? describePlatformaticError(error, 'running a transaction', config)
          : error,
      );
    return lane(run);
  };

  return {
    async send(records) {
      if (records.length === 0) return [];
      // A transactional producer may only write inside a transaction: make the batch one.
      if (transactional) return transaction((tx) => tx.send(records));
      try {
        return await oneAtATime(async () =>
          toWrites(await producer.send({ messages: toPlatformaticMessages(records) })),
        );
      } catch (error) {
        throw describePlatformaticError(error, `producing ${records.length} records`, config);
      }
    },
    transaction,
    async close() {
      await lane(async () => undefined);
      await oneAtATime(async () => undefined);
      await producer.close();
    },
  };
}
