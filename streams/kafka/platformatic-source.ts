/**
 * The @platformatic/kafka implementation of {@link RecordSource}: one consumer-group member
 * reading read_committed, offsets committed only explicitly, starting positions written to the
 * group before it joins (as kafkajs-source.ts does). The library's `MessagesStream` hands over
 * one record at a time and pauses only as a whole, so this source runs its own fetch loop over
 * the library's group membership (join, heartbeats, rejoin) and `fetch`: one Fetch per leader
 * for every assigned partition that is not paused, then each partition's records to the
 * handler, one batch at a time, as kafkajs' `eachBatch` does with one partition at a time.
 */
import { Consumer, FetchIsolationLevels, GenericError, ListOffsetTimestamps } from '@platformatic/kafka';
import type { Admin } from '@platformatic/kafka';
import type { KafkaConnectionConfig } from '../../infra/kafka/client-config.js';
import { platformaticAdmin } from '../../infra/kafka/platformatic-admin.js';
import {
  describePlatformaticError,
  flagRetriable,
  isPlatformaticRetriable,
  platformaticBaseOptions,
  platformaticErrorHas,
  retryDelayMs,
} from '../../infra/kafka/platformatic-client.js';
import { committedRecords } from './platformatic-records.js';
import { retryWhileRetriable } from './retriable.js';
import type {
  BatchHandler,
  ConsumedRecord,
  RecordSource,
  SourceOptions,
  StartPosition,
  TopicPartition,
  TopicPartitionOffset,
} from './transport.js';

/** How long the broker holds a fetch with nothing to return (kafkajs-source.ts uses the same). */
const MAX_WAIT_MS = 250;

/** A fetch request's total bytes: room for a 6-partition topic read at 4 MiB a partition (consume-spa.ts). */
const MAX_BYTES = 32 << 20;

const keyOf = ({ topic, partition }: TopicPartition): string => `${topic}\u0000${partition}`;

/** Writes the group's committed offsets for the requested start (the group must be idle). */
async function applyStart(admin: Admin, options: SourceOptions, start: StartPosition): Promise<void> {
  if (start.kind === 'committed') return;
  const port = platformaticAdmin(admin);
  for (const topic of options.topics) {
    let partitionOffsets: { partition: number; offset: bigint }[];
    if (start.kind === 'earliest' || start.kind === 'latest')
      partitionOffsets = (await port.topicOffsets(topic)).map((o) => ({
        partition: o.partition,
        offset: start.kind === 'earliest' ? o.low : o.high,
      }));
    else if (start.kind === 'timestamp')
      partitionOffsets = await port.offsetsForTimestamp(topic, start.timestamp);
    else
      partitionOffsets = start.offsets
        .filter((o) => o.topic === topic)
        .map(({ partition, offset }) => ({ partition, offset }));
    if (partitionOffsets.length === 0) continue;
    try {
      await admin.alterConsumerGroupOffsets({
        groupId: options.groupId,
        topics: [{ name: topic, partitionOffsets }],
      });
    } catch (error) {
      throw flagRetriable(error);
    }
  }
}

/** Where each assigned partition reads next: the group's committed offset, else the fallback end. */
async function committedPositions(
  consumer: Consumer,
  partitions: readonly TopicPartition[],
  fallback: 'earliest' | 'latest',
): Promise<Map<string, bigint>> {
  const byTopic = new Map<string, number[]>();
  for (const { topic, partition } of partitions)
    byTopic.set(topic, [...(byTopic.get(topic) ?? []), partition]);
  const topics = [...byTopic].map(([topic, list]) => ({ topic, partitions: list }));
  const committed = await consumer.listCommittedOffsets({ topics });
  const ends = await consumer.listOffsets({
    topics: [...byTopic.keys()],
    timestamp: fallback === 'earliest' ? ListOffsetTimestamps.EARLIEST : ListOffsetTimestamps.LATEST,
    isolationLevel: FetchIsolationLevels.READ_COMMITTED,
  });
  const positions = new Map<string, bigint>();
  for (const p of partitions) {
    const offset = committed.get(p.topic)?.[p.partition] ?? -1n;
    positions.set(keyOf(p), offset >= 0n ? offset : (ends.get(p.topic)?.[p.partition] ?? 0n));
  }
  return positions;
}

/** A Fetch answer as the library returns it (its type is not exported by name). */
type FetchResponse = Awaited<ReturnType<Consumer['fetch']>>;

/** Cluster metadata as the library returns it. */
type Metadata = Awaited<ReturnType<Consumer['metadata']>>;

/** One partition's part of a fetch: where it was asked to start. */
interface Requested extends TopicPartition {
  readonly offset: bigint;
}

/** Creates a source; it joins the group when `run` is called. */
export async function createPlatformaticSource(
  config: KafkaConnectionConfig,
  admin: Admin,
  options: SourceOptions,
): Promise<RecordSource> {
  if (options.topics.length === 0) throw new Error(`source for group "${options.groupId}" names no topics`);
  const start = options.start ?? { kind: 'committed', fallback: 'earliest' };
  const fallback = start.kind === 'committed' ? start.fallback : 'earliest';
  const maxBytesPerPartition = options.maxBytesPerPartition ?? 1 << 20;
  const consumer = new Consumer({
    ...platformaticBaseOptions(config),
    groupId: options.groupId,
    autocommit: false,
    isolationLevel: FetchIsolationLevels.READ_COMMITTED,
    maxWaitTime: MAX_WAIT_MS,
    maxBytes: MAX_BYTES,
    maxBytesPerPartition,
    // kafkajs' group timings, so both adapters leave and rebalance alike.
    sessionTimeout: 30_000,
    rebalanceTimeout: 60_000,
    heartbeatInterval: 3_000,
  });
  try {
    await retryWhileRetriable(() => applyStart(admin, options, start), 10_000);
    // Fails now, as kafkajs' connect and subscribe do, when the cluster or a topic is missing.
    await consumer.metadata({ topics: [...options.topics] });
  } catch (error) {
    await consumer.close().catch(() => undefined);
    throw describePlatformaticError(error, `starting consumer group "${options.groupId}"`, config);
  }

  const assigned = new Map<string, TopicPartition>();
  const positions = new Map<string, bigint>();
  const paused = new Set<string>();
  let assignmentChanged = true;
  let running = false;
  let stopped = false;
  let loop: Promise<void> = Promise.resolve();
  // A connection to a broker dropped (or a fetch round failed) and no fetch has been answered since.
  let lost = false;
  const connectionLost = (): void => {
    if (stopped || lost) return;
    lost = true;
    options.onConnection?.('lost');
  };
  // Wakes the loop when it waits for a partition to resume, a seek, a rebalance or close.
  let wake: () => void = () => undefined;
  const poke = (): void => wake();
  const idle = (ms?: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(resolve, ms);
      wake = () => (clearTimeout(timer), resolve());
    });

  const refreshAssignment = async (): Promise<void> => {
    assignmentChanged = false;
    const now = (consumer.assignments ?? []).flatMap(({ topic, partitions }) =>
      partitions.map((partition) => ({ topic, partition })),
    );
    const current = new Set(now.map(keyOf));
    for (const key of [...assigned.keys()]) {
      if (current.has(key)) continue;
      assigned.delete(key);
      positions.delete(key);
    }
    // Partitions kept through a rebalance keep their position; new ones start where the group is.
    const added = now.filter((p) => !assigned.has(keyOf(p)));
    let found = new Map<string, bigint>();
    try {
      if (added.length > 0) found = await committedPositions(consumer, added, fallback);
    } catch (error) {
      assignmentChanged = true; // asked again next round
      throw error;
    }
    for (const p of added) {
      assigned.set(keyOf(p), p);
      const offset = found.get(keyOf(p));
      if (offset !== undefined && !positions.has(keyOf(p))) positions.set(keyOf(p), offset);
    }
    options.onAssigned?.(now);
  };

  /** After OFFSET_OUT_OF_RANGE (records deleted below a position): move those partitions into range. */
  const clampPositions = async (requested: readonly Requested[]): Promise<void> => {
    const port = platformaticAdmin(admin);
    for (const topic of new Set(requested.map((r) => r.topic))) {
      const ranges = new Map((await port.topicOffsets(topic)).map((o) => [o.partition, o]));
      for (const r of requested.filter((q) => q.topic === topic)) {
        const range = ranges.get(r.partition);
        if (!range || positions.get(keyOf(r)) !== r.offset) continue;
        if (r.offset < range.low || r.offset > range.high)
          positions.set(keyOf(r), fallback === 'latest' ? range.high : range.low);
      }
    }
  };

  const fetchFrom = (
    metadata: Metadata,
    leader: number,
    requested: readonly Requested[],
  ): Promise<FetchResponse> => {
    const byTopic = new Map<string, Requested[]>();
    for (const r of requested) byTopic.set(r.topic, [...(byTopic.get(r.topic) ?? []), r]);
    return consumer.fetch({
      node: leader,
      maxWaitTime: MAX_WAIT_MS,
      maxBytes: MAX_BYTES,
      isolationLevel: FetchIsolationLevels.READ_COMMITTED,
      topics: [...byTopic].map(([topic, list]) => ({
        topicId: metadata.topics.get(topic)!.id,
        partitions: list.map((r) => ({
          partition: r.partition,
          fetchOffset: r.offset,
          partitionMaxBytes: maxBytesPerPartition,
          currentLeaderEpoch: -1,
          lastFetchedEpoch: -1,
        })),
      })),
    });
  };

  /** Hands one fetched partition to the handler and moves its position past what was taken. */
  const deliver = async (
    handler: BatchHandler,
    requested: Requested,
    fetched: FetchResponse['responses'][number]['partitions'][number],
  ): Promise<void> => {
    const key = keyOf(requested);
    // Paused, sought or revoked since the fetch: its records stay in Kafka for the next one.
    if (stopped || paused.has(key) || !assigned.has(key) || positions.get(key) !== requested.offset) return;
    const { records, nextOffset } = committedRecords(
      fetched.records ?? [],
      fetched.abortedTransactions,
      requested.offset,
    );
    if (nextOffset === undefined) return;
    if (records.length === 0) {
      positions.set(key, nextOffset); // only markers or aborted records
      return;
    }
    const consumed: ConsumedRecord[] = records.map((r) => ({
      ...r,
      topic: requested.topic,
      partition: requested.partition,
    }));
    const outcome = await handler({
      topic: requested.topic,
      partition: requested.partition,
      records: consumed,
      highWatermark: fetched.highWatermark,
    });
    const taken = outcome === undefined ? records.length : outcome.taken;
    if (!Number.isInteger(taken) || taken < 0 || taken > records.length)
      throw new Error(
        `batch handler took ${taken} of ${records.length} records; expected 0..${records.length}`,
      );
    // A seek or a revocation during the handler wins over what it took.
    if (!assigned.has(key) || positions.get(key) !== requested.offset) return;
    positions.set(key, taken === records.length ? nextOffset : records[taken]!.offset);
  };

  const fetchRound = async (handler: BatchHandler): Promise<void> => {
    if (assignmentChanged) await refreshAssignment();
    const ready: Requested[] = [];
    for (const [key, partition] of assigned) {
      const offset = positions.get(key);
      if (!paused.has(key) && offset !== undefined) ready.push({ ...partition, offset });
    }
    if (ready.length === 0) return idle();
    const metadata = await consumer.metadata({ topics: [...options.topics] });
    const byLeader = new Map<number, Requested[]>();
    for (const r of ready) {
      const leader = metadata.topics.get(r.topic)?.partitions[r.partition]?.leader ?? -1;
      // No leader yet (a new topic, a broker that just died): asked again with fresh metadata.
      if (!metadata.brokers.has(leader)) continue;
      byLeader.set(leader, [...(byLeader.get(leader) ?? []), r]);
    }
    if (byLeader.size === 0) {
      consumer.clearMetadata();
      return idle(retryDelayMs(config, 1));
    }
    if ([...byLeader.values()].flat().length < ready.length) consumer.clearMetadata();
    const rounds = [...byLeader].map(async ([leader, requested]) => ({
      requested,
      response: await fetchFrom(metadata, leader, requested),
    }));
    const answers = await Promise.allSettled(rounds);
    if (lost && answers.some((answer) => answer.status === 'fulfilled')) {
      lost = false;
      options.onConnection?.('regained');
    }
    let failure: unknown;
    for (const [i, answer] of answers.entries()) {
      if (answer.status === 'rejected') {
        const requested = [...byLeader.values()][i]!;
        if (platformaticErrorHas(answer.reason, 'apiId', 'OFFSET_OUT_OF_RANGE'))
          await clampPositions(requested);
        else failure ??= answer.reason;
        continue;
      }
      const { requested, response } = answer.value;
      const topicsById = new Map([...metadata.topics].map(([name, t]) => [t.id, name]));
      for (const topicResponse of response.responses) {
        const topic = topicsById.get(topicResponse.topicId);
        for (const fetched of topicResponse.partitions) {
          const asked = requested.find((r) => r.topic === topic && r.partition === fetched.partitionIndex);
          if (asked) await deliver(handler, asked, fetched);
        }
      }
    }
    if (failure !== undefined) throw failure;
  };

  const runLoop = async (handler: BatchHandler, onFatal?: (error: Error) => void): Promise<void> => {
    let failures = 0;
    while (!stopped) {
      try {
        await fetchRound(handler);
        failures = 0;
      } catch (error) {
        if (stopped) return;
        // A broker restarting or a leader moving: fresh metadata and another round, with backoff.
        if (
          !isPlatformaticRetriable(error) ||
          platformaticErrorHas(error, 'code', 'PLT_KFK_AUTHENTICATION')
        ) {
          stopped = true;
          // A handler's own error stops the source as it was thrown, as in kafkajs-source.ts.
          const own = error instanceof Error && !GenericError.isGenericError(error);
          onFatal?.(own ? error : describePlatformaticError(error, 'consuming', config));
          return;
        }
        consumer.clearMetadata();
        connectionLost();
        failures += 1;
        await idle(retryDelayMs(config, failures));
      }
    }
  };

  return {
    async run(handler, onFatal) {
      if (running) throw new Error(`source for group "${options.groupId}" is already running`);
      running = true;
      consumer.on('consumer:group:join', () => ((assignmentChanged = true), poke()));
      consumer.on('client:broker:disconnect', connectionLost);
      // The library emits `error` when rejoining the group failed past its retries.
      consumer.on('error', (error: Error) => {
        if (stopped) return;
        stopped = true;
        poke();
        onFatal?.(describePlatformaticError(error, 'rejoining the consumer group', config));
      });
      try {
        for (const topic of options.topics) consumer.topics.track(topic);
        await consumer.joinGroup({});
      } catch (error) {
        throw describePlatformaticError(error, `joining consumer group "${options.groupId}"`, config);
      }
      loop = runLoop(handler, onFatal);
    },
    pause(partitions) {
      for (const p of partitions) paused.add(keyOf(p));
    },
    resume(partitions) {
      for (const p of partitions) paused.delete(keyOf(p));
      poke();
    },
    seek(position) {
      const key = keyOf(position);
      if (!assigned.has(key))
        throw new Error(
          `seek to ${position.topic}[${position.partition}]: the partition is not assigned to this member of "${options.groupId}"`,
        );
      positions.set(key, position.offset);
      poke();
    },
    async commit(offsets: readonly TopicPartitionOffset[]) {
      if (offsets.length === 0) return;
      try {
        if (consumer.memberId !== null && consumer.isActive())
          await consumer.commit({ offsets: offsets.map((o) => ({ ...o, leaderEpoch: -1 })) });
        else
          for (const topic of new Set(offsets.map((o) => o.topic)))
            await admin.alterConsumerGroupOffsets({
              groupId: options.groupId,
              topics: [
                {
                  name: topic,
                  partitionOffsets: offsets
                    .filter((o) => o.topic === topic)
                    .map(({ partition, offset }) => ({ partition, offset })),
                },
              ],
            });
      } catch (error) {
        throw describePlatformaticError(error, `committing offsets of group "${options.groupId}"`, config);
      }
    },
    async close() {
      stopped = true;
      poke();
      await loop;
      await consumer.close(true);
      // A stopped throwaway group is deleted so it does not linger in `spa topics`; best effort.
      if (options.ephemeral) await admin.deleteGroups({ groups: [options.groupId] }).catch(() => undefined);
    },
  };
}
