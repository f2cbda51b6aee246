/**
 * An idempotent apply of the SPA topic definitions (schemas/topics.ts): create what is
 * missing, align configs that differ, never delete.
 */
import kafkajs from 'kafkajs';
import type { Admin } from 'kafkajs';
import type { TopicDefinition } from '../../schemas/topics.js';
import { kafkaConnectionConfig } from './client-config.js';
import type { KafkaConnectionConfig } from './client-config.js';
import { connectKafkajsAdmin } from './kafkajs-client.js';

// kafkajs is CommonJS and Node's ESM loader cannot see this export by name.
const { ConfigResourceTypes } = kafkajs;

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
