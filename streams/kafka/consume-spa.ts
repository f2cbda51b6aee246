/**
 * A bounded, ephemeral read of one topic for tools (replay, tap, bench): a fresh consumer
 * group nobody else uses (deleted again on close), the start resolved to offsets up front, and
 * the end offsets captured at start, so "read what is there now, then stop" is well defined
 * while producers keep writing: a bounded read ends once it has reached every end offset,
 * however long its first fetch takes. The read keeps its own position and commits nothing, so a
 * broker restart neither repeats nor skips a record. Records come through {@link recordStream},
 * so backpressure is its policy: **block** (partitions pause at `maxInFlight` un-acked records,
 * nothing buffers).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { Observable, type Subscription } from 'rxjs';
import type { KafkaAdmin } from '../../infra/kafka/client/admin.js';
import type { KafkaConnectionConfig } from '../../infra/kafka/client/config.js';
import { ConsumerLagTable, spaMetrics } from '../telemetry/metrics.js';
import { tracedBatchHandler } from './kafka-spans.js';
import { ReadPositions } from './read-positions.js';
import { recordStream, type InFlightRecord } from './rx-source.js';
import type { KafkaTransport, RecordSource } from '../../infra/kafka/client/transport.js';

/** Where a read begins. */
export type ReadStart =
  | { readonly kind: 'earliest' }
  /** Only records written after the read starts. */
  | { readonly kind: 'latest' }
  /** The first record with timestamp >= `timestamp` (epoch ms) in every partition. */
  | { readonly kind: 'timestamp'; readonly timestamp: number }
  /**
   * Offset `every` in every partition, or per partition; partitions named in neither are not
   * read (they start at their end). Offsets outside a partition's range are clamped to it.
   */
  | {
      readonly kind: 'offsets';
      readonly every?: bigint;
      readonly partitions?: ReadonlyMap<number, bigint>;
    };

/**
 * Bytes a read fetches per partition and request: 4 MiB instead of the sources' 1 MiB, so a
 * replay reads a partition in a quarter of the round trips (bench/kafka.ts at 4096 trajectories:
 * read ÷ ConsumerPerformance 0.56× and 0.87× against 0.36× and 0.49× with 1 MiB;
 * docs/experiments/2026-11-25-kafka-throughput-levers.md). What waits in memory stays bounded: a
 * fetch holds at most this per partition, and records past `maxInFlight` are left in Kafka.
 */
const READ_BYTES_PER_PARTITION = 4 << 20;

/**
 * Longest a read waits for its consumer to leave the group and for the group's deletion: with
 * the broker down both retry for tens of seconds, and Ctrl-C must end a tap within 2 s. What is
 * left undone (an empty group without offsets) the broker's group cleanup removes.
 */
const CLOSE_WAIT_MS = 1000;

/** What a read covers in one partition: [start, end), `end` absent when following. */
export interface PartitionRange {
  readonly partition: number;
  readonly start: bigint;
  readonly end?: bigint;
}

/** Options of {@link readTopic}. */
export interface ReadTopicOptions {
  readonly topic: string;
  readonly start: ReadStart;
  /** Keep reading past the end offsets captured at start. Default false. */
  readonly follow?: boolean;
  /** Prefix of the ephemeral group id (`<purpose>-<random>`). Default `spa-read`. */
  readonly purpose?: string;
  /** Most records emitted and not yet acked. Default 256. */
  readonly maxInFlight?: number;
  /** Where the read says it lost the broker, and where it resumes once it is back. */
  readonly log?: (line: string) => void;
}

/** A prepared read; subscribe to `records` to start consuming. */
export interface TopicRead {
  readonly topic: string;
  readonly groupId: string;
  readonly ranges: readonly PartitionRange[];
  /**
   * Each partition's records in offset order; completes at the end offsets (unless following).
   * Unsubscribing (or completion) closes the consumer and deletes the ephemeral group.
   */
  readonly records: Observable<InFlightRecord>;
  /** Resolves once the consumer is closed and its group deleted (after the Observable ends). */
  readonly closed: Promise<void>;
  /**
   * Resolves once the consumer has joined its group and holds its partitions, before its first
   * fetch (where a throughput measurement starts, as ConsumerPerformance's fetch time does).
   */
  readonly joined: Promise<void>;
}

/** What a read needs from a connection (a subset of SpaKafka). */
export interface KafkaConnection {
  readonly transport: KafkaTransport;
  readonly config: KafkaConnectionConfig;
}

async function resolveRanges(admin: KafkaAdmin, topic: string, start: ReadStart, follow: boolean) {
  const existing = await admin.listTopics();
  if (!existing.includes(topic)) {
    const names = existing.filter((name) => !name.startsWith('__')).sort();
    throw new Error(`topic "${topic}" does not exist; existing topics: ${names.join(', ') || 'none'}`);
  }
  // `high` is the last stable offset (the port reads read_committed), so everything below the
  // captured end is already committed or aborted.
  const offsets = await admin.topicOffsets(topic);
  const byTime = start.kind === 'timestamp' ? await admin.offsetsForTimestamp(topic, start.timestamp) : [];
  return offsets
    .map(({ partition, low: lo, high: hi }): PartitionRange => {
      const wanted =
        start.kind === 'earliest'
          ? lo
          : start.kind === 'latest'
            ? hi
            : start.kind === 'timestamp'
              ? (byTime.find((o) => o.partition === partition)?.offset ?? hi)
              : (start.partitions?.get(partition) ?? start.every ?? hi);
      const clamped = wanted < lo ? lo : wanted > hi ? hi : wanted;
      return { partition, start: clamped, ...(follow ? {} : { end: hi }) };
    })
    .sort((a, b) => a.partition - b.partition);
}

function checkPartitions(topic: string, start: ReadStart, ranges: readonly PartitionRange[]): void {
  if (start.kind !== 'offsets') return;
  for (const partition of start.partitions?.keys() ?? []) {
    if (!ranges.some((r) => r.partition === partition))
      throw new Error(
        `partition ${partition} does not exist in "${topic}"; it has partitions 0..${ranges.length - 1}`,
      );
  }
}

/**
 * Prepares an ephemeral read of `topic` (read_committed). It commits and writes no offsets: it
 * seeks each partition to the read's own position on every assignment (see boundedRecords).
 */
export async function readTopic(kafka: KafkaConnection, options: ReadTopicOptions): Promise<TopicRead> {
  const follow = options.follow ?? false;
  const groupId = `${options.purpose ?? 'spa-read'}-${randomUUID().slice(0, 8)}`;
  const admin = await kafka.transport.admin();
  let ranges: PartitionRange[];
  try {
    ranges = await resolveRanges(admin, options.topic, options.start, follow);
    checkPartitions(options.topic, options.start, ranges);
  } finally {
    await admin.close();
  }
  let markClosed: () => void = () => undefined;
  const closed = new Promise<void>((resolve) => (markClosed = resolve));
  let markJoined: () => void = () => undefined;
  const joined = new Promise<void>((resolve) => (markJoined = resolve));
  const records = boundedRecords(kafka, {
    groupId,
    topic: options.topic,
    ranges,
    maxInFlight: options.maxInFlight ?? 256,
    log: options.log ?? (() => undefined),
    onClosed: markClosed,
    onJoined: markJoined,
  });
  return { topic: options.topic, groupId, ranges, records, closed, joined };
}

interface BoundedOptions {
  readonly groupId: string;
  readonly topic: string;
  readonly ranges: readonly PartitionRange[];
  readonly maxInFlight: number;
  readonly log: (line: string) => void;
  readonly onClosed: () => void;
  readonly onJoined: () => void;
}

/**
 * Wraps a source to learn when it has joined its group and to clean up after closing; its
 * batches are traced (process spans, received bytes) and its lag reported to spa_consumer_lag.
 */
function instrumented(
  source: RecordSource,
  groupId: string,
  brokers: readonly string[],
  onJoined: () => void,
  onClose: () => Promise<void>,
): RecordSource {
  const lagTable = new ConsumerLagTable();
  const unregisterLag = spaMetrics().observeConsumerLag(lagTable.read);
  return {
    run: async (handler, onFatal) => {
      const onLag = lagTable.update.bind(lagTable);
      await source.run(tracedBatchHandler(handler, { groupId, onLag, brokers }), onFatal);
      onJoined();
    },
    pause: (partitions) => source.pause(partitions),
    resume: (partitions) => source.resume(partitions),
    seek: (position) => source.seek(position),
    commit: (offsets) => source.commit(offsets),
    close: async () => {
      unregisterLag();
      // Not awaited past the cap: a consumer that cannot reach the broker gives up on its own.
      await Promise.race([
        source.close().catch(() => undefined),
        delay(CLOSE_WAIT_MS, undefined, { ref: false }),
      ]);
      await onClose();
    },
  };
}

function boundedRecords(kafka: KafkaConnection, options: BoundedOptions): Observable<InFlightRecord> {
  return new Observable<InFlightRecord>((subscriber) => {
    const ends = new Map(options.ranges.flatMap((r) => (r.end === undefined ? [] : [[r.partition, r.end]])));
    const following = options.ranges.some((r) => r.end === undefined);
    // Partitions that still have offsets to read below their end.
    const pending = new Set(
      options.ranges.filter((r) => r.end !== undefined && r.start < r.end).map((r) => r.partition),
    );
    let finished = false;
    let inner: Subscription | undefined;
    const finish = (): void => {
      if (finished) return;
      finished = true;
      subscriber.complete();
    };
    // The source deletes its throwaway group when it closes (`ephemeral`).
    const cleanup = async (): Promise<void> => options.onClosed();
    if (!following && pending.size === 0) {
      options.onClosed();
      finish();
      return;
    }
    // A partition is read to its end once a record or a fetched batch reaches it.
    const reached = (partition: number, next: bigint): void => {
      const end = ends.get(partition);
      if (end !== undefined && next >= end) pending.delete(partition);
      if (!following && pending.size === 0) finish();
    };
    const positions = new ReadPositions(options.topic, options.ranges, options.log);
    let seek: RecordSource['seek'] = () => undefined; // the source's, once it exists (before it joins)
    void kafka.transport
      .source({
        groupId: options.groupId,
        topics: [options.topic],
        // Where the group would start; every assignment seeks to the read's own position.
        start: { kind: 'committed', fallback: 'earliest' },
        ephemeral: true,
        maxBytesPerPartition: READ_BYTES_PER_PARTITION,
        onAssigned: (partitions) => positions.assigned(partitions, seek),
        onConnection: (state) => positions.connection(state),
        // Kafka delivers no record for a transaction marker or an aborted record, so a partition
        // whose range ends in one shows its end only in what the fetch covered.
        onFetched: ({ partition, offset }) => reached(partition, offset),
      })
      .then(
        (source) => {
          seek = (position) => source.seek(position);
          const tracked = instrumented(
            source,
            options.groupId,
            kafka.config.brokers,
            options.onJoined,
            cleanup,
          );
          if (subscriber.closed) return void tracked.close();
          inner = recordStream(tracked, { maxInFlight: options.maxInFlight }).subscribe({
            next: ({ record, ack }) => {
              const end = ends.get(record.partition);
              if (!positions.take(record))
                ack(); // handed out before the broker restarted
              else if (end !== undefined && record.offset >= end) ack();
              else subscriber.next({ record, ack: () => (finished ? undefined : ack()) });
              reached(record.partition, record.offset + 1n);
            },
            error: (error: unknown) => subscriber.error(error),
            complete: finish,
          });
        },
        (error: unknown) => {
          options.onClosed();
          subscriber.error(error);
        },
      );
    return () => {
      inner?.unsubscribe();
    };
  });
}
