/**
 * An idempotent apply of the SPA topic definitions (schemas/topics.ts): create what is
 * missing, align configs that differ, never delete. A definition without a replication factor
 * is sized to the brokers the admin sees (`clusterReplication`): one copy on the local broker,
 * three copies and `min.insync.replicas` 2 on a cluster of three or more.
 */
import { clusterReplication, type TopicDefinition } from '../../schemas/topics.js';
import type { KafkaAdmin } from './client/admin.js';
import { kafkaConnectionConfig } from './client/config.js';
import type { KafkaConnectionConfig } from './client/config.js';
import { openKafkaAdmin } from './client/kafka-client.js';

/** A topic as the cluster reports it. */
export interface ExistingTopic {
  readonly partitions: number;
  /** The fewest replicas any of its partitions has; absent when not known. */
  readonly replicationFactor?: number;
  readonly configs: Readonly<Record<string, string>>;
}

/** A definition placed on a cluster: its replication factor and configs as they are applied. */
type PlacedTopic = TopicDefinition & { readonly replicationFactor: number };

/** One step of bringing the cluster in line with the definitions. */
export type TopicChange =
  | { readonly kind: 'create'; readonly topic: PlacedTopic }
  | {
      readonly kind: 'alter-configs';
      readonly topic: PlacedTopic;
      readonly differences: readonly { name: string; actual: string | undefined; wanted: string }[];
    }
  /** Partition counts are never changed automatically: it would move keys between partitions. */
  | { readonly kind: 'partition-mismatch'; readonly topic: PlacedTopic; readonly actual: number }
  /** Nor replica counts: that is a partition reassignment (kafka-reassign-partitions), not a config. */
  | { readonly kind: 'replication-mismatch'; readonly topic: PlacedTopic; readonly actual: number };

/**
 * The definition with a replication factor (its own, or the cluster's) and, where there are three
 * copies or more, `min.insync.replicas` 2 unless it sets one: acks=all then waits for two copies.
 */
function place(topic: TopicDefinition, replicationFactor: number): PlacedTopic {
  const minIsr = clusterReplication(replicationFactor).minInsyncReplicas;
  const configs =
    minIsr > 1 && topic.configs['min.insync.replicas'] === undefined
      ? { ...topic.configs, 'min.insync.replicas': String(minIsr) }
      : topic.configs;
  return { ...topic, replicationFactor, configs };
}

/**
 * Pure diff between definitions and what exists on a cluster of `brokers`; an empty plan means
 * nothing to do. An existing topic keeps its replicas, and its `min.insync.replicas` follows the
 * replicas it has, so a topic with one copy never demands two.
 */
export function planTopicChanges(
  definitions: readonly TopicDefinition[],
  existing: ReadonlyMap<string, ExistingTopic>,
  brokers = 1,
): TopicChange[] {
  const clusterFactor = clusterReplication(brokers).replicationFactor;
  const changes: TopicChange[] = [];
  for (const definition of definitions) {
    const wantedFactor = definition.replicationFactor ?? clusterFactor;
    const actual = existing.get(definition.name);
    if (!actual) {
      changes.push({ kind: 'create', topic: place(definition, wantedFactor) });
      continue;
    }
    const topic = place(definition, actual.replicationFactor ?? wantedFactor);
    const differences = Object.entries(topic.configs)
      .filter(([name, wanted]) => actual.configs[name] !== wanted)
      .map(([name, wanted]) => ({ name, actual: actual.configs[name], wanted }));
    if (differences.length > 0) changes.push({ kind: 'alter-configs', topic, differences });
    if (actual.partitions !== topic.partitions)
      changes.push({ kind: 'partition-mismatch', topic, actual: actual.partitions });
    if (actual.replicationFactor !== undefined && actual.replicationFactor < wantedFactor)
      changes.push({
        kind: 'replication-mismatch',
        topic: place(definition, wantedFactor),
        actual: actual.replicationFactor,
      });
  }
  return changes;
}

/**
 * Asks `settled` every 100 ms until it answers true. An error it throws is retried like a false;
 * past `timeoutMs` the last error is thrown, or one saying `failure()`.
 */
async function pollUntil(
  settled: () => Promise<boolean>,
  timeoutMs: number,
  failure: () => string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await settled()) return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
    }
    if (Date.now() > deadline) throw new Error(`${failure()} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Waits until every partition of `topics` has a leader. Hand-written because the Kafka client's
 * own `waitForLeaders` gives up on the UNKNOWN_TOPIC_OR_PARTITION a fresh KRaft broker answers
 * for a moment after CreateTopics returns.
 */
export async function waitForLeaders(
  admin: KafkaAdmin,
  topics: readonly string[],
  timeoutMs = 30_000,
): Promise<void> {
  await pollUntil(
    async () => {
      const found = await admin.describeTopics(topics);
      return (
        found.length === topics.length && found.every((t) => t.partitions.every((p) => p.leader !== null))
      );
    },
    timeoutMs,
    () => `topics ${topics.join(', ')} have no leaders`,
  );
}

/**
 * Waits until `topics` describe with the configs just set: KRaft applies an AlterConfigs through
 * its metadata log, so a describe right after it (the next apply's, say) can still show the old
 * values on a loaded broker, and that apply would alter them again.
 */
async function waitForConfigs(
  admin: KafkaAdmin,
  topics: readonly PlacedTopic[],
  timeoutMs = 30_000,
): Promise<void> {
  let pending = topics;
  await pollUntil(
    async () => {
      const described = await admin.topicConfigs(topics.map((t) => t.name));
      pending = topics.filter((t) =>
        Object.entries(t.configs).some(([name, wanted]) => described.get(t.name)?.[name] !== wanted),
      );
      return pending.length === 0;
    },
    timeoutMs,
    () => `topics ${pending.map((t) => t.name).join(', ')} do not show their new configs`,
  );
}

/** What an apply did, with a one-line summary for logs. */
export interface TopicReport {
  readonly changes: readonly TopicChange[];
  readonly summary: string;
}

async function describeExisting(
  admin: KafkaAdmin,
  names: readonly string[],
): Promise<Map<string, ExistingTopic>> {
  const present = new Set(await admin.listTopics());
  const wanted = names.filter((name) => present.has(name));
  const existing = new Map<string, ExistingTopic>();
  if (wanted.length === 0) return existing;
  const metadata = await admin.describeTopics(wanted);
  const configs = await admin.topicConfigs(wanted);
  for (const topic of metadata) {
    const replicationFactor = Math.min(...topic.partitions.map((p) => p.replicas.length));
    existing.set(topic.name, {
      partitions: topic.partitions.length,
      replicationFactor,
      configs: configs.get(topic.name) ?? {},
    });
  }
  return existing;
}

function summarize(changes: readonly TopicChange[]): string {
  if (changes.length === 0) return 'all topics up to date';
  return changes
    .map((c) =>
      c.kind === 'create'
        ? `created ${c.topic.name}${c.topic.replicationFactor > 1 ? ` (${c.topic.replicationFactor} replicas)` : ''}`
        : c.kind === 'alter-configs'
          ? `altered ${c.topic.name} (${c.differences.map((d) => `${d.name}: ${d.actual} -> ${d.wanted}`).join(', ')})`
          : c.kind === 'partition-mismatch'
            ? `WARNING ${c.topic.name} has ${c.actual} partitions, defined ${c.topic.partitions} (left as is)`
            : `WARNING ${c.topic.name} has ${c.actual} replicas, wanted ${c.topic.replicationFactor} on this cluster (left as is)`,
    )
    .join('; ');
}

/**
 * Applies the definitions through an open admin (the port, admin.ts). Idempotent: a second run
 * finds nothing to do. Altered topics get exactly the defined configs (the admin port speaks the
 * non-incremental AlterConfigs, admin.ts, so hand-set extras on a managed topic are reset).
 */
export async function applyTopics(
  admin: KafkaAdmin,
  definitions: readonly TopicDefinition[],
  expectedBrokers = 1,
): Promise<TopicReport> {
  const existing = await describeExisting(
    admin,
    definitions.map((d) => d.name),
  );
  const missing = definitions.some((d) => !existing.has(d.name));
  // The brokers alive now: a topic created while one is down gets fewer copies (warned on the next apply).
  const brokers = missing ? await liveBrokers(admin, expectedBrokers) : (await admin.brokers()).length;
  const changes = planTopicChanges(definitions, existing, brokers);
  const creates = changes.flatMap((c) => (c.kind === 'create' ? [c.topic] : []));
  if (creates.length > 0) {
    await admin.createTopics(
      creates.map((t) => ({
        name: t.name,
        partitions: t.partitions,
        replicationFactor: t.replicationFactor,
        configs: t.configs,
      })),
    );
    await waitForLeaders(
      admin,
      creates.map((t) => t.name),
    );
  }
  const alters = changes.flatMap((c) => (c.kind === 'alter-configs' ? [c.topic] : []));
  if (alters.length > 0) {
    await admin.replaceTopicConfigs(alters.map((t) => ({ name: t.name, configs: t.configs })));
    await waitForConfigs(admin, alters);
  }
  return { changes, summary: summarize(changes) };
}

/** How long a create waits for the brokers it was given to all be live (see {@link liveBrokers}). */
const BROKERS_SETTLE_MS = 10_000;

/**
 * The number of live brokers, waiting up to {@link BROKERS_SETTLE_MS} for `expected` of them: just
 * after a cluster starts (or under load) one broker can be missing from the metadata for a
 * moment, and a topic created then would get fewer replicas for good.
 */
async function liveBrokers(admin: KafkaAdmin, expected: number): Promise<number> {
  const deadline = Date.now() + BROKERS_SETTLE_MS;
  for (;;) {
    const live = (await admin.brokers()).length;
    if (live >= expected || Date.now() >= deadline) return live;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/**
 * Connects to `brokers` (plus optional SASL/retry settings), applies, disconnects. Each bootstrap
 * address is taken for a broker of the cluster: topics are created once that many are live, or
 * after {@link BROKERS_SETTLE_MS} with those that are.
 */
export async function applyTopicsTo(
  brokers: readonly string[],
  definitions: readonly TopicDefinition[],
  connection: Partial<KafkaConnectionConfig> = {},
): Promise<TopicReport> {
  const admin = await openKafkaAdmin(
    kafkaConnectionConfig({ clientId: 'spa-topics', ...connection, brokers }),
  );
  try {
    return await applyTopics(admin, definitions, new Set(brokers).size);
  } finally {
    await admin.close();
  }
}
