import { envFactory } from '../envs/registry.js';
import type { Annotation } from '../operators/annotate-ground-truth.js';
import type { MalformedFilter } from '../operators/filter-malformed.js';
import type { EpisodeConfig } from '../streams/episodes/episode-config.js';
import { generateToKafka } from '../streams/generator-sinks.js';
import { retryWhileRetriable } from '../streams/kafka/retriable.js';
import type { SpaKafka } from '../streams/kafka/spa-kafka.js';
import type { OutboundTopic } from '../schemas/outbound.js';
import type { PolicySource } from '../policies/policy.js';
import { trajectoryProgress } from './progress.js';
import { generateFlags, generateInShards } from './generator-shards.js';

/** What one data stage produced, as `summary.json` records it per stage. */
export interface DataStageSummary {
  readonly stage: string;
  /** The policy that played the episodes: its name and version (null for built-in policies). */
  readonly policy: { readonly name: string; readonly version: number | null };
  readonly trajectories: number;
  /** SFT rows accepted by the malformed filter and published. */
  readonly rowsAccepted: number;
  /** Rejected records (to the run's DLQ) by reason code. */
  readonly rejectsByReason: Readonly<Record<string, number>>;
  readonly topics: { readonly sft: string; readonly dlq: string };
}

/**
 * Who plays a data stage: `policy` in this process under `transactionalId`, or `shards` child
 * processes `spa generate --shard i/n` (generator-shards.ts) given the policy's own flags.
 */
export type DataStagePlayers =
  | { readonly policy: PolicySource; readonly transactionalId: string }
  | { readonly shards: number; readonly policyFlags: readonly string[] };

/**
 * Plays `episodes` in world-model mode through the generator pipeline (ground-truth annotation →
 * malformed filter → SFT rows or DLQ) into `kafka`'s topics, with a progress line, and counts
 * what each record became.
 */
export async function generateSftData(
  kafka: SpaKafka,
  options: {
    readonly stage: string;
    readonly episodes: EpisodeConfig;
    readonly players: DataStagePlayers;
    readonly describePolicy: DataStageSummary['policy'];
    readonly malformedFilter: MalformedFilter;
    /** How the rows' states are filled (default gt, SPA's; docs/spa-data.md#replacement). */
    readonly annotation?: Annotation;
    /** An earlier attempt committed part of this stage: delete its records first. */
    readonly purgeFirst: boolean;
  },
): Promise<DataStageSummary> {
  const { episodes, players } = options;
  const annotation = options.annotation ?? 'gt';
  if (options.purgeFirst) {
    const topics = [kafka.topics.trajectories, kafka.topics.sft, kafka.topics.dlq];
    const purged = await purgeTopics(kafka, topics);
    process.stderr.write(
      `[${options.stage}] removed ${purged} offsets an interrupted earlier attempt left\n`,
    );
  }
  let counts: Record<OutboundTopic, number>;
  let rejectsByReason: Record<string, number> = {};
  if ('shards' in players) {
    process.stderr.write(`[${options.stage}] ${players.shards} generator processes (spa generate --shard)\n`);
    const filter = options.malformedFilter;
    const args = [
      ...generateFlags(episodes, 'sft', kafka.topics),
      ...['--filter-envs', filter.envs.length > 0 ? filter.envs.join(',') : 'none'],
      ...(filter.parserReasons ? ['--filter-parser-reasons'] : []),
      ...['--annotation', annotation],
      ...players.policyFlags,
    ];
    ({ counts, rejectsByReason } = await generateInShards(
      args,
      players.shards,
      kafka.config.brokers.join(','),
    ));
  } else {
    const progress = trajectoryProgress(options.stage, episodes);
    counts = await generateToKafka(kafka, players.transactionalId, {
      episodes,
      makeEnv: envFactory({ name: episodes.env }),
      policy: players.policy,
      pipeline: {
        target: 'sft',
        malformedFilter: options.malformedFilter,
        annotation,
      },
      onRecord: (o) => {
        progress.add(o.topic);
        if (o.topic === 'dlq') rejectsByReason[o.record.reason] = (rejectsByReason[o.record.reason] ?? 0) + 1;
      },
    });
    progress.done();
  }
  return {
    stage: options.stage,
    policy: options.describePolicy,
    trajectories: counts.trajectories,
    rowsAccepted: counts.sft,
    rejectsByReason,
    topics: { sft: kafka.topics.sft, dlq: kafka.topics.dlq },
  };
}

/** Deletes every record of `topics` (Kafka's DeleteRecords up to each high watermark); returns how many. */
async function purgeTopics(kafka: SpaKafka, topics: readonly string[]): Promise<number> {
  const admin = await kafka.transport.admin();
  try {
    let purged = 0;
    for (const topic of topics) {
      const offsets = await retryWhileRetriable(() => admin.topicOffsets(topic), 10_000);
      const nonEmpty = offsets.filter((p) => p.high > p.low);
      purged += nonEmpty.reduce((n, p) => n + Number(p.high - p.low), 0);
      if (nonEmpty.length > 0)
        await admin.deleteRecords(
          topic,
          nonEmpty.map((p) => ({ partition: p.partition, offset: p.high })),
        );
    }
    return purged;
  } finally {
    await admin.close();
  }
}

/**
 * Topics named `<prefix>…` that are not empty, with their offsets (high − low watermark summed over
 * partitions; records and transaction markers): a fresh run checks that its run id's topics are empty.
 */
export async function offsetsUnder(kafka: SpaKafka, prefix: string): Promise<Record<string, number>> {
  const admin = await kafka.transport.admin();
  try {
    const held: Record<string, number> = {};
    for (const topic of (await admin.listTopics()).filter((name) => name.startsWith(prefix)).sort()) {
      const offsets = await retryWhileRetriable(() => admin.topicOffsets(topic), 10_000);
      const records = offsets.reduce((n, p) => n + Number(p.high - p.low), 0);
      if (records > 0) held[topic] = records;
    }
    return held;
  } finally {
    await admin.close();
  }
}
