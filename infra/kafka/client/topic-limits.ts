/**
 * The `max.message.bytes` of the topics a sink writes: the largest record batch each takes (the
 * topic's own setting, else the broker's `message.max.bytes`, as DescribeConfigs reports it). Read
 * once per topic for the sink's life; a topic whose setting cannot be read (no DescribeConfigs
 * permission, a topic that does not exist yet) counts as Kafka's default and is asked again next
 * time. A limit changed while the sink runs is not seen; the broker then refuses the send as before.
 * Read with them: each topic's partition count, so a sink can place keyed records itself and
 * bound each partition's batch instead of the topic's share of a request (kafkajs-sink.ts).
 */
import type { Kafka } from 'kafkajs';
import type { KafkaConnectionConfig } from './config.js';
import { kafkajsAdmin } from './kafkajs-admin.js';
import { connectKafkajsAdmin } from './kafkajs-client.js';
import { KAFKA_DEFAULT_MAX_MESSAGE_BYTES } from './record-size.js';

/** Topic limits, read on first use. */
export interface TopicLimits {
  /** The limit of each of `topics` (read once for those not yet known), as a lookup. */
  of(topics: readonly string[]): Promise<(topic: string) => number>;
  /** The partition count of a topic `of` has read; undefined when it could not be read. */
  partitions(topic: string): number | undefined;
}

/** Topic limits read through an admin client of `kafka`, opened for each read of unknown topics. */
export function topicLimits(kafka: Kafka, config: KafkaConnectionConfig): TopicLimits {
  const known = new Map<string, number>();
  const partitionCounts = new Map<string, number>();
  const lookup = (topic: string): number => known.get(topic) ?? KAFKA_DEFAULT_MAX_MESSAGE_BYTES;
  return {
    async of(topics) {
      const unknown = [...new Set(topics)].filter((topic) => !known.has(topic));
      if (unknown.length === 0) return lookup;
      try {
        const admin = kafkajsAdmin(await connectKafkajsAdmin(config, kafka));
        try {
          for (const [topic, configs] of await admin.topicConfigs(unknown)) {
            const limit = Number(configs['max.message.bytes']);
            if (Number.isSafeInteger(limit) && limit > 0) known.set(topic, limit);
          }
          for (const { name, partitions } of await admin.describeTopics(unknown))
            if (partitions.length > 0) partitionCounts.set(name, partitions.length);
        } finally {
          await admin.close();
        }
      } catch {
        // Unreadable: Kafka's default for now (lookup), asked again on the next send.
      }
      return lookup;
    },
    partitions: (topic) => partitionCounts.get(topic),
  };
}
