/**
 * The Kafka transport port: what the pipeline needs from a Kafka client, and nothing about
 * which client provides it. kafkajs is the default adapter (kafkajs-adapter.ts); kafkajs has
 * had no release since 2023, so a librdkafka-based adapter must be able to slot in behind
 * these interfaces. Keys and values are opaque Buffers here: Avro framing lives in schemas/.
 */
import type { KafkaAdmin } from './admin.js';

/** Record headers; a name that occurs twice on the wire keeps its last value. */
export type RecordHeaders = Readonly<Record<string, Buffer>>;

/** One partition of one topic. */
export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

/** A position in a partition; for commits it is the offset of the next record to read. */
export interface TopicPartitionOffset extends TopicPartition {
  readonly offset: bigint;
}

/** A record to produce. Records with the same key land in the same partition. */
export interface OutgoingRecord {
  readonly topic: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers?: RecordHeaders;
  /** Create time in epoch ms; default: now. */
  readonly timestamp?: number;
  /** Explicit partition; default: chosen from the key. */
  readonly partition?: number;
}

/** Where a produced batch landed: the first offset written to one partition. */
export interface PartitionWrite extends TopicPartition {
  readonly baseOffset: bigint;
}

/** A record as read from a partition. */
export interface ConsumedRecord extends TopicPartitionOffset {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: RecordHeaders;
  /** Record timestamp in epoch ms. */
  readonly timestamp: number;
}

/** Records handed over from one partition, in offset order. */
export interface ConsumedBatch extends TopicPartition {
  readonly records: readonly ConsumedRecord[];
  /** The partition's high watermark when fetched (offset of the next record to be written). */
  readonly highWatermark: bigint;
}

/**
 * What a batch handler took: `void` means the whole batch; `{ taken: n }` means the first n
 * records, and the rest are delivered again once the partition is resumed or re-fetched —
 * the way to stop mid-batch after pausing the partition (backpressure without buffering).
 */
type BatchOutcome = void | { readonly taken: number };

/** Consumes batches; the source does not fetch more for the partition until it resolves. */
export type BatchHandler = (batch: ConsumedBatch) => Promise<BatchOutcome>;

/** A send that held records their topics cannot take; nothing of it was sent. */
export class RecordTooLargeError extends Error {
  override readonly name = 'RecordTooLargeError';
  constructor(readonly records: readonly OversizedRecord[]) {
    const [first] = records;
    super(
      `${records.length} record(s) over their topic's max.message.bytes, e.g. ${first?.bytes} bytes ` +
        `for ${first?.topic} (limit ${first?.limit}); nothing was sent`,
    );
  }
}

/** Inside a transaction: writes and consumer offsets become visible together or not at all. */
export interface SinkTransaction {
  send(records: readonly OutgoingRecord[]): Promise<readonly PartitionWrite[]>;
  /** Commits a consumer group's offsets as part of the transaction (consume-transform-produce). */
  sendOffsets(groupId: string, offsets: readonly TopicPartitionOffset[]): Promise<void>;
}

/** A record its topic cannot take: a batch of it alone (compressed as sent) is over the topic's limit. */
export interface OversizedRecord {
  /** Its index in the records asked about. */
  readonly index: number;
  readonly topic: string;
  /** Bytes of a batch holding it alone, as the sink would send it (an upper bound). */
  readonly bytes: number;
  /** The topic's `max.message.bytes`. */
  readonly limit: number;
}

/**
 * Produces records with an idempotent producer and acks=all, so a retried request after a
 * broker failure never writes a record twice. A send is cut into as many requests as it takes for
 * each partition's batch to fit its topic's `max.message.bytes` (the broker refuses a whole batch
 * over it, record-size.ts); a send holding a record its topic cannot take at all sends nothing and
 * fails with a {@link RecordTooLargeError} — ask {@link RecordSink.oversized} first.
 */
export interface RecordSink {
  /** Writes the records (in order, per topic/partition) and resolves when all are acknowledged. */
  send(records: readonly OutgoingRecord[]): Promise<readonly PartitionWrite[]>;
  /** Those of `records` their topic cannot take (none: an empty list), by each topic's `max.message.bytes`. */
  oversized(records: readonly OutgoingRecord[]): Promise<readonly OversizedRecord[]>;
  /**
   * Runs `work` in a transaction: commit when it resolves, abort when it throws (and rethrow).
   * Transactions on one sink run one at a time. Needs `transactionalId` in the sink options.
   * After a retriable broker error the aborted transaction is retried by calling `work`
   * again, so `work` must be safe to repeat (it usually only sends records). A commit is never
   * redone: one whose EndTxn still fails after every retry is reported, as it may be visible.
   */
  transaction<T>(work: (tx: SinkTransaction) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** Where a consumer group begins reading. */
export type StartPosition =
  /** The group's committed offsets; partitions without one start at `fallback`. */
  | { readonly kind: 'committed'; readonly fallback: 'earliest' | 'latest' }
  /** Replay from the first retained record (rewrites the group's committed offsets). */
  | { readonly kind: 'earliest' }
  /** Only records written from now on (rewrites the group's committed offsets). */
  | { readonly kind: 'latest' }
  /** First record with timestamp >= `timestamp` ms (rewrites the group's committed offsets). */
  | { readonly kind: 'timestamp'; readonly timestamp: number }
  /** Exactly these positions (rewrites the group's committed offsets for them). */
  | { readonly kind: 'offsets'; readonly offsets: readonly TopicPartitionOffset[] };

/**
 * Reads topics as one member of a consumer group, read_committed (aborted transactional
 * records are never delivered). Offsets are committed only when the caller says so.
 */
export interface RecordSource {
  /**
   * Joins the group and starts delivering batches to `handler`; resolves once running.
   * `onFatal` receives an error that stopped consumption for good.
   */
  run(handler: BatchHandler, onFatal?: (error: Error) => void): Promise<void>;
  /** Stops fetching these partitions; already delivered records are unaffected. */
  pause(partitions: readonly TopicPartition[]): void;
  resume(partitions: readonly TopicPartition[]): void;
  /** Moves a running source's position in an assigned partition. */
  seek(position: TopicPartitionOffset): void;
  /** Commits explicit offsets (each the next offset to read) for the group. */
  commit(offsets: readonly TopicPartitionOffset[]): Promise<void>;
  /** Leaves the group and disconnects. */
  close(): Promise<void>;
}

/** Options for a sink. */
export interface SinkOptions {
  /** Enables transactions; must be stable across restarts of the same logical producer. */
  readonly transactionalId?: string;
  /** Batch compression; gzip is the only codec kafkajs reads without plugins. Default gzip. */
  readonly compression?: 'none' | 'gzip';
}

/** Options for a source. */
export interface SourceOptions {
  readonly groupId: string;
  readonly topics: readonly string[];
  /** Default: committed offsets, earliest for new partitions. */
  readonly start?: StartPosition;
  /** Upper bound on bytes fetched per partition per request (bounds memory). Default 1 MiB. */
  readonly maxBytesPerPartition?: number;
  /** A throwaway group (a policy follower, a tap): deleted when the source closes. */
  readonly ephemeral?: boolean;
  /**
   * Told the member's partitions each time it is assigned them: when it joins, and when it
   * rejoins (after a broker restart, a lost session or a rebalance), before it fetches from them;
   * a `seek` made here holds. How a reader that commits nothing keeps its place (consume-spa.ts).
   */
  readonly onAssigned?: (partitions: readonly TopicPartition[]) => void;
  /**
   * Told when the source loses the broker (`lost`; it goes on retrying) and when it is consuming
   * again (`regained`). kafkajs reports no dropped connection, so its adapter says `lost` once
   * kafkajs' retries are spent and its consumer restarts (~25 s with the default retries): an
   * outage it rides out within its retries goes unreported.
   */
  readonly onConnection?: (state: 'lost' | 'regained') => void;
  /**
   * Told, once a fetched batch of a partition has been handed over whole, the offset after the
   * last one it covered: transaction markers and aborted records, which are never delivered,
   * included (a batch of nothing else is told too). How a bounded read knows it has reached an
   * end offset whose last offsets are commit markers (consume-spa.ts).
   */
  readonly onFetched?: (position: TopicPartitionOffset) => void;
}

/** A connection to a Kafka cluster that hands out sinks, sources and admins. */
export interface KafkaTransport {
  sink(options?: SinkOptions): Promise<RecordSink>;
  source(options: SourceOptions): Promise<RecordSource>;
  /**
   * A connected admin of the same client (topics, offsets, groups: the admin port, admin.ts);
   * the caller closes it.
   */
  admin(): Promise<KafkaAdmin>;
  /** Closes every sink, source and admin handed out. */
  close(): Promise<void>;
}
