/**
 * The Kafka admin port: the cluster operations SPA needs besides sending and receiving (topics,
 * offsets, consumer groups), and nothing about which client provides them; the send/receive
 * port is transport.ts, and like it this one speaks plain objects and bigint offsets. The topic
 * apply (../topics.ts), the broker probe (../probe.ts) and `spa doctor` open one with
 * `openKafkaAdmin` (kafka-client.ts); streams/ and cli/ get one from `KafkaTransport.admin()`,
 * so it comes from the same adapter as their sinks and sources. kafkajs implements it in
 * kafkajs-admin.ts.
 *
 * Errors are the client's own, rethrown as they come: one worth retrying keeps kafkajs'
 * `retriable: true`, which `retryWhileRetriable` (retriable.ts) looks for. Only
 * the port is exported; the shapes it takes and returns are exported once another module
 * names them (`npm run lint:unused` reports exports nobody imports).
 */

/** One partition's offsets: the records it holds are [low, high). */
interface PartitionOffsets {
  readonly partition: number;
  /** The first retained offset. */
  readonly low: bigint;
  /**
   * The end, read_committed: the last stable offset, so everything below it is committed or
   * aborted (an open transaction's records are at or past it).
   */
  readonly high: bigint;
}

/** A position in one partition of a known topic. */
interface PartitionOffset {
  readonly partition: number;
  readonly offset: bigint;
}

/** A partition as the cluster metadata describes it. */
interface PartitionDescription {
  readonly partition: number;
  /** The leader's node id; null while the partition has none (e.g. just after creation). */
  readonly leader: number | null;
  /** Node ids of every copy, in sync or not. */
  readonly replicas: readonly number[];
}

/** A topic as the cluster metadata describes it. */
interface TopicDescription {
  readonly name: string;
  readonly partitions: readonly PartitionDescription[];
}

/** A topic to create. */
interface NewTopic {
  readonly name: string;
  readonly partitions: number;
  readonly replicationFactor: number;
  readonly configs: Readonly<Record<string, string>>;
}

/** A live broker in the cluster metadata. */
interface BrokerNode {
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
}

/** A group as a broker lists it. */
interface GroupListing {
  readonly groupId: string;
  /** `consumer` for consumer groups; empty for a group with no members and no protocol yet. */
  readonly protocolType: string;
}

/** A group as its coordinator describes it. */
interface GroupDescription {
  readonly groupId: string;
  /** Kafka's group state, e.g. `Stable`, `Empty`, `PreparingRebalance`. */
  readonly state: string;
  readonly memberCount: number;
}

/** A group's committed offsets in one topic. */
interface GroupTopicOffsets {
  readonly topic: string;
  readonly partitions: readonly {
    readonly partition: number;
    /** The next offset the group reads; null where the group has committed none. */
    readonly offset: bigint | null;
  }[];
}

/** A connection to a Kafka cluster's admin API; the caller closes it. */
export interface KafkaAdmin {
  /** Every topic's name, internal ones (`__consumer_offsets`, …) included. */
  listTopics(): Promise<string[]>;
  /** The brokers the cluster metadata lists as alive now. */
  brokers(): Promise<readonly BrokerNode[]>;
  /** Partitions, leaders and replicas of `topics`. */
  describeTopics(topics: readonly string[]): Promise<TopicDescription[]>;
  /** Each topic's config entries as the broker reports them (no synonyms), by topic name. */
  topicConfigs(topics: readonly string[]): Promise<ReadonlyMap<string, Readonly<Record<string, string>>>>;
  /** Creates the topics; resolves once the controller accepted them, before they have leaders. */
  createTopics(topics: readonly NewTopic[]): Promise<void>;
  /**
   * Sets each topic's configs to exactly these: the non-incremental AlterConfigs (the one
   * kafkajs speaks), so entries not named here return to their defaults.
   */
  replaceTopicConfigs(
    topics: readonly { readonly name: string; readonly configs: Readonly<Record<string, string>> }[],
  ): Promise<void>;
  deleteTopics(topics: readonly string[]): Promise<void>;
  /** Low and high offsets of every partition of `topic`. */
  topicOffsets(topic: string): Promise<PartitionOffsets[]>;
  /**
   * Per partition of `topic`, the first offset whose record has timestamp >= `timestamp` (epoch
   * ms), or the partition's high offset where no record is that recent.
   */
  offsetsForTimestamp(topic: string, timestamp: number): Promise<PartitionOffset[]>;
  /** Deletes the records of `topic` below each given offset (DeleteRecords). */
  deleteRecords(topic: string, partitions: readonly PartitionOffset[]): Promise<void>;
  /** Every group on every broker. */
  listGroups(): Promise<GroupListing[]>;
  describeGroups(groupIds: readonly string[]): Promise<GroupDescription[]>;
  /** The group's committed offsets in each of `topics` (every partition of them). */
  groupOffsets(groupId: string, topics: readonly string[]): Promise<GroupTopicOffsets[]>;
  close(): Promise<void>;
}
