/**
 * The SPA topics (design: Topics) with partitions, retention, compaction and compression,
 * and an idempotent apply: create what is missing, align configs that differ, never delete.
 */
import kafkajs from 'kafkajs';
import type { Admin } from 'kafkajs';
import { kafkaConnectionConfig } from '../../streams/kafka/config.js';
import type { KafkaConnectionConfig } from '../../streams/kafka/config.js';
import { connectKafkajsAdmin } from '../../streams/kafka/kafkajs-adapter.js';

/** What each SPA topic is for. */
export type TopicRole = 'trajectories' | 'sft' | 'rollouts' | 'dlq' | 'policy';

/** One topic as it should exist. Configs are Kafka topic configs, as strings. */
export interface TopicDefinition {
  readonly role: TopicRole;
  readonly name: string;
  readonly partitions: number;
  readonly replicationFactor: number;
  readonly configs: Readonly<Record<string, string>>;
}

/** Naming and sizing knobs; every topic name is configurable. */
export interface SpaTopicOptions {
  /** Prefix of the default names. Default `spa.` (spa.trajectories, …). */
  readonly prefix?: string;
  /** Full names per role, overriding prefix + role. */
  readonly names?: Partial<Record<TopicRole, string>>;
  readonly partitions?: Partial<Record<TopicRole, number>>;
  /** 1 on the local broker; 3 on a real cluster (design: Scaling out). */
  readonly replicationFactor?: number;
}

// kafkajs is CommonJS and Node's ESM loader cannot see this export by name.
const { ConfigResourceTypes } = kafkajs;

const day = 24 * 60 * 60 * 1000;

// Values go through kafkajs, which reads gzip without plugins; the topic says gzip too, so
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
  const replicationFactor = options.replicationFactor ?? 1;
  if (!Number.isInteger(replicationFactor) || replicationFactor < 1)
    throw new Error(`replicationFactor=${replicationFactor} must be an integer >= 1`);
  return (Object.keys(defaults) as TopicRole[]).map((role) => {
    const name = names[role];
    // Kafka's legal topic names (Topic.validate): 1..249 of [a-zA-Z0-9._-], not . or ..
    if (!/^[a-zA-Z0-9._-]{1,249}$/.test(name) || name === '.' || name === '..')
      throw new Error(`topic name "${name}" for ${role} must be 1..249 of [a-zA-Z0-9._-]`);
    const partitions = options.partitions?.[role] ?? defaults[role].partitions;
    if (!Number.isInteger(partitions) || partitions < 1)
      throw new Error(`partitions.${role}=${partitions} must be an integer >= 1`);
    return { role, name, partitions, replicationFactor, configs: defaults[role].configs };
  });
}

/** A topic as the cluster reports it. */
export interface ExistingTopic {
  readonly partitions: number;
  readonly configs: Readonly<Record<string, string>>;
}

/** One step of bringing the cluster in line with the definitions. */
export type TopicChange =
  | { readonly kind: 'create'; readonly topic: TopicDefinition }
  | {
      readonly kind: 'alter-configs';
      readonly topic: TopicDefinition;
      readonly differences: readonly { name: string; actual: string | undefined; wanted: string }[];
    }
  /** Partition counts are never changed automatically: it would move keys between partitions. */
  | { readonly kind: 'partition-mismatch'; readonly topic: TopicDefinition; readonly actual: number };

/** Pure diff between definitions and what exists; an empty plan means nothing to do. */
export function planTopicChanges(
  definitions: readonly TopicDefinition[],
  existing: ReadonlyMap<string, ExistingTopic>,
): TopicChange[] {
  const changes: TopicChange[] = [];
  for (const topic of definitions) {
    const actual = existing.get(topic.name);
    if (!actual) {
      changes.push({ kind: 'create', topic });
      continue;
    }
    const differences = Object.entries(topic.configs)
      .filter(([name, wanted]) => actual.configs[name] !== wanted)
      .map(([name, wanted]) => ({ name, actual: actual.configs[name], wanted }));
    if (differences.length > 0) changes.push({ kind: 'alter-configs', topic, differences });
    if (actual.partitions !== topic.partitions)
      changes.push({ kind: 'partition-mismatch', topic, actual: actual.partitions });
  }
  return changes;
}

/**
 * Waits until every partition of `topics` has a leader. Hand-written because kafkajs'
 * `waitForLeaders` gives up on the UNKNOWN_TOPIC_OR_PARTITION a fresh KRaft broker answers
 * for a moment after CreateTopics returns.
 */
export async function waitForLeaders(
  admin: Admin,
  topics: readonly string[],
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const { topics: found } = await admin.fetchTopicMetadata({ topics: [...topics] });
      if (found.length === topics.length && found.every((t) => t.partitions.every((p) => p.leader >= 0)))
        return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    if (Date.now() > deadline)
      throw new Error(`topics ${topics.join(', ')} have no leaders after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** What an apply did, with a one-line summary for logs. */
export interface TopicReport {
  readonly changes: readonly TopicChange[];
  readonly summary: string;
}

async function describeExisting(admin: Admin, names: readonly string[]): Promise<Map<string, ExistingTopic>> {
  const present = new Set(await admin.listTopics());
  const wanted = names.filter((name) => present.has(name));
  const existing = new Map<string, ExistingTopic>();
  if (wanted.length === 0) return existing;
  const metadata = await admin.fetchTopicMetadata({ topics: wanted });
  const configs = await admin.describeConfigs({
    includeSynonyms: false,
    resources: wanted.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })),
  });
  for (const topic of metadata.topics) {
    const resource = configs.resources.find((r) => r.resourceName === topic.name);
    const entries = Object.fromEntries(
      (resource?.configEntries ?? []).map((e) => [e.configName, e.configValue]),
    );
    existing.set(topic.name, { partitions: topic.partitions.length, configs: entries });
  }
  return existing;
}

function summarize(changes: readonly TopicChange[]): string {
  if (changes.length === 0) return 'all topics up to date';
  return changes
    .map((c) =>
      c.kind === 'create'
        ? `created ${c.topic.name}`
        : c.kind === 'alter-configs'
          ? `altered ${c.topic.name} (${c.differences.map((d) => `${d.name}: ${d.actual} -> ${d.wanted}`).join(', ')})`
          : `WARNING ${c.topic.name} has ${c.actual} partitions, defined ${c.topic.partitions} (left as is)`,
    )
    .join('; ');
}

/**
 * Applies the definitions through a connected admin client. Idempotent: a second run finds
 * nothing to do. Altered topics get exactly the defined configs (kafkajs only speaks the
 * non-incremental AlterConfigs, so hand-set extras on a managed topic are reset).
 */
export async function applyTopics(
  admin: Admin,
  definitions: readonly TopicDefinition[],
): Promise<TopicReport> {
  const changes = planTopicChanges(
    definitions,
    await describeExisting(
      admin,
      definitions.map((d) => d.name),
    ),
  );
  const creates = changes.flatMap((c) => (c.kind === 'create' ? [c.topic] : []));
  if (creates.length > 0) {
    await admin.createTopics({
      waitForLeaders: false,
      topics: creates.map((t) => ({
        topic: t.name,
        numPartitions: t.partitions,
        replicationFactor: t.replicationFactor,
        configEntries: Object.entries(t.configs).map(([name, value]) => ({ name, value })),
      })),
    });
    await waitForLeaders(
      admin,
      creates.map((t) => t.name),
    );
  }
  const alters = changes.flatMap((c) => (c.kind === 'alter-configs' ? [c.topic] : []));
  if (alters.length > 0) {
    await admin.alterConfigs({
      validateOnly: false,
      resources: alters.map((t) => ({
        type: ConfigResourceTypes.TOPIC,
        name: t.name,
        configEntries: Object.entries(t.configs).map(([name, value]) => ({ name, value })),
      })),
    });
  }
  return { changes, summary: summarize(changes) };
}

/** Connects to `brokers` (plus optional SASL/retry settings), applies, disconnects. */
export async function applyTopicsTo(
  brokers: readonly string[],
  definitions: readonly TopicDefinition[],
  connection: Partial<KafkaConnectionConfig> = {},
): Promise<TopicReport> {
  const admin = await connectKafkajsAdmin(
    kafkaConnectionConfig({ clientId: 'spa-topics', ...connection, brokers }),
  );
  try {
    return await applyTopics(admin, definitions);
  } finally {
    await admin.disconnect();
  }
}
