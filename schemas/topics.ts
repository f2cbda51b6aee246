/**
 * The SPA topics (design: Topics): their roles, default names, partitions, retention,
 * compaction and compression. The contract the pipeline (streams/) and the topic admin
 * (infra/kafka/topics.ts) share; pure data, no client.
 */

/** What each SPA topic is for. */
export type TopicRole = 'trajectories' | 'sft' | 'rollouts' | 'dlq' | 'policy';

/** One topic as it should exist. Configs are Kafka topic configs, as strings. */
export interface TopicDefinition {
  readonly role: TopicRole;
  readonly name: string;
  readonly partitions: number;
  /** Absent: sized to the cluster when the topic is created ({@link clusterReplication}). */
  readonly replicationFactor?: number;
  readonly configs: Readonly<Record<string, string>>;
}

/** Naming and sizing knobs; every topic name is configurable. */
export interface SpaTopicOptions {
  /** Prefix of the default names. Default `spa.` (spa.trajectories, …). */
  readonly prefix?: string;
  /** Full names per role, overriding prefix + role. */
  readonly names?: Partial<Record<TopicRole, string>>;
  readonly partitions?: Partial<Record<TopicRole, number>>;
  /** Default: sized to the cluster the topics are created on ({@link clusterReplication}). */
  readonly replicationFactor?: number;
}

/** How many copies a topic keeps, and how many must have a write before it is acknowledged. */
export interface Replication {
  readonly replicationFactor: number;
  /** `min.insync.replicas`: with acks=all, a write needs this many in-sync copies. */
  readonly minInsyncReplicas: number;
}

/**
 * The replication of SPA's topics (and of Kafka's transaction and offset logs, infra/kafka/
 * broker-config.ts) on a cluster of `brokers`: three copies where there are three brokers, and a
 * write acknowledged by two of them, so one broker may die (or restart) without losing an
 * acknowledged record or stopping producers. A smaller cluster keeps a copy per broker and
 * acknowledges with one, as the single local broker does.
 */
export function clusterReplication(brokers: number): Replication {
  if (!Number.isInteger(brokers) || brokers < 1)
    throw new Error(`a cluster of ${brokers} brokers: expected an integer >= 1`);
  const replicationFactor = Math.min(3, brokers);
  return { replicationFactor, minInsyncReplicas: replicationFactor >= 3 ? 2 : 1 };
}

const day = 24 * 60 * 60 * 1000;

// The Kafka client reads gzip without plugins (infra/kafka/client/); the topic says gzip too, so
// the broker keeps the producer's batches instead of recompressing them.
const durableLog = { 'cleanup.policy': 'delete', 'compression.type': 'gzip' };

const defaults: Record<TopicRole, { partitions: number; configs: Record<string, string> }> = {
  // The record of the run: replay from offset 0 must always work, so nothing expires.
  trajectories: { partitions: 6, configs: { ...durableLog, 'retention.ms': '-1' } },
  // SFT epochs re-read the whole topic.
  sft: { partitions: 6, configs: { ...durableLog, 'retention.ms': '-1' } },
  // PPO consumes rollouts live (bounded staleness); a week covers reruns and debugging.
  rollouts: { partitions: 6, configs: { ...durableLog, 'retention.ms': String(7 * day) } },
  dlq: { partitions: 3, configs: { ...durableLog, 'retention.ms': String(30 * day) } },
  // Latest policy per key: compacted, one partition so versions stay totally ordered;
  // small segments and dirty ratio so old versions are compacted away within the hour.
  policy: {
    partitions: 1,
    configs: {
      'cleanup.policy': 'compact',
      'compression.type': 'producer',
      'min.cleanable.dirty.ratio': '0.1',
      'segment.ms': String(60 * 60 * 1000),
    },
  },
};

/** The topic names for the given options, by role. */
export function spaTopicNames(options: SpaTopicOptions = {}): Record<TopicRole, string> {
  const prefix = options.prefix ?? 'spa.';
  const name = (role: TopicRole): string => options.names?.[role] ?? `${prefix}${role}`;
  return {
    trajectories: name('trajectories'),
    sft: name('sft'),
    rollouts: name('rollouts'),
    dlq: name('dlq'),
    policy: name('policy'),
  };
}

/** The SPA topic definitions; throws naming a bad name, partition count or replication factor. */
export function spaTopics(options: SpaTopicOptions = {}): TopicDefinition[] {
  const names = spaTopicNames(options);
  const { replicationFactor } = options;
  if (replicationFactor !== undefined && (!Number.isInteger(replicationFactor) || replicationFactor < 1))
    throw new Error(`replicationFactor=${replicationFactor} must be an integer >= 1`);
  return (Object.keys(defaults) as TopicRole[]).map((role) => {
    const name = names[role];
    // Kafka's legal topic names (Topic.validate): 1..249 of [a-zA-Z0-9._-], not . or ..
    if (!/^[a-zA-Z0-9._-]{1,249}$/.test(name) || name === '.' || name === '..')
      throw new Error(`topic name "${name}" for ${role} must be 1..249 of [a-zA-Z0-9._-]`);
    const partitions = options.partitions?.[role] ?? defaults[role].partitions;
    if (!Number.isInteger(partitions) || partitions < 1)
      throw new Error(`partitions.${role}=${partitions} must be an integer >= 1`);
    const configs = defaults[role].configs;
    return {
      role,
      name,
      partitions,
      ...(replicationFactor === undefined ? {} : { replicationFactor }),
      configs,
    };
  });
}
