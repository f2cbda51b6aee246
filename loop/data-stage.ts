import type { OutboundTopic } from '../schemas/outbound.js';
import { retryWhileRetriable } from '../infra/kafka/client/retriable.js';
import type { SpaKafka } from '../streams/kafka/spa-kafka.js';

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

/** A data stage's summary from what its generator counted into `kafka`'s topics. */
export function dataStageSummary(
  kafka: SpaKafka,
  stage: string,
  policy: DataStageSummary['policy'],
  played: { counts: Record<OutboundTopic, number>; rejectsByReason: Record<string, number> },
): DataStageSummary {
  return {
    stage,
    policy,
    trajectories: played.counts.trajectories,
    rowsAccepted: played.counts.sft,
    rejectsByReason: played.rejectsByReason,
    topics: { sft: kafka.topics.sft, dlq: kafka.topics.dlq },
  };
}

/**
 * A data stage an earlier attempt started and did not finish left part of its records: deletes
 * every record of `kafka`'s trajectories, sft and dlq topics so the stage plays again from empty.
 */
export async function purgeDataTopics(kafka: SpaKafka, stage: string): Promise<void> {
  const topics = [kafka.topics.trajectories, kafka.topics.sft, kafka.topics.dlq];
  const purged = await purgeTopics(kafka, topics);
  process.stderr.write(`[${stage}] removed ${purged} offsets an interrupted earlier attempt left\n`);
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
