/**
 * The kafkajs implementation of the admin port ({@link KafkaAdmin}, admin.ts): each operation
 * is one call of kafkajs' admin client, with its strings turned into bigints and its errors
 * passed on untouched. kafkajs' own retries apply as before, and so does the fix in
 * patches/kafkajs+2.2.4.patch that has ListOffsets refresh metadata and retry after a leader
 * moved (infra/kafka/client/README.md#the-kafkajs-patch).
 */
import kafkajs from 'kafkajs';
import type { Admin } from 'kafkajs';
import type { KafkaAdmin } from './admin.js';
import type { KafkaConnectionConfig } from './config.js';
import { connectKafkajsAdmin } from './kafkajs-client.js';

// kafkajs is CommonJS and Node's ESM loader cannot see this export by name.
const { ConfigResourceTypes } = kafkajs;

function configEntries(configs: Readonly<Record<string, string>>): { name: string; value: string }[] {
  return Object.entries(configs).map(([name, value]) => ({ name, value }));
}

/** The port over a connected kafkajs admin client; `close()` disconnects that client. */
export function kafkajsAdmin(admin: Admin): KafkaAdmin {
  return {
    listTopics: () => admin.listTopics(),
    brokers: async () => (await admin.describeCluster()).brokers,
    async describeTopics(topics) {
      const { topics: found } = await admin.fetchTopicMetadata({ topics: [...topics] });
      return found.map(({ name, partitions }) => ({
        name,
        partitions: partitions.map((p) => ({
          partition: p.partitionId,
          leader: p.leader >= 0 ? p.leader : null,
          replicas: p.replicas,
        })),
      }));
    },
    async topicConfigs(topics) {
      const { resources } = await admin.describeConfigs({
        includeSynonyms: false,
        resources: topics.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })),
      });
      return new Map(
        resources.map((r) => [
          r.resourceName,
          Object.fromEntries(r.configEntries.map((e) => [e.configName, e.configValue])),
        ]),
      );
    },
    async createTopics(topics) {
      // Leaders are waited for by the caller (topics.ts: kafkajs' own wait gives up too early).
      await admin.createTopics({
        waitForLeaders: false,
        topics: topics.map((t) => ({
          topic: t.name,
          numPartitions: t.partitions,
          replicationFactor: t.replicationFactor,
          configEntries: configEntries(t.configs),
        })),
      });
    },
    async replaceTopicConfigs(topics) {
      await admin.alterConfigs({
        validateOnly: false,
        resources: topics.map((t) => ({
          type: ConfigResourceTypes.TOPIC,
          name: t.name,
          configEntries: configEntries(t.configs),
        })),
      });
    },
    deleteTopics: (topics) => admin.deleteTopics({ topics: [...topics] }),
    async topicOffsets(topic) {
      // ListOffsets read_committed (kafkajs' default), so `high` is the last stable offset.
      const offsets = await admin.fetchTopicOffsets(topic);
      return offsets.map(({ partition, low, high }) => ({ partition, low: BigInt(low), high: BigInt(high) }));
    },
    async offsetsForTimestamp(topic, timestamp) {
      // kafkajs substitutes the high offset where no record is that recent.
      const offsets = await admin.fetchTopicOffsetsByTimestamp(topic, timestamp);
      return offsets.map(({ partition, offset }) => ({ partition, offset: BigInt(offset) }));
    },
    deleteRecords: (topic, partitions) =>
      admin.deleteTopicRecords({
        topic,
        partitions: partitions.map(({ partition, offset }) => ({ partition, offset: offset.toString() })),
      }),
    listGroups: async () =>
      (await admin.listGroups()).groups.map(({ groupId, protocolType }) => ({ groupId, protocolType })),
    async describeGroups(groupIds) {
      const { groups } = await admin.describeGroups([...groupIds]);
      return groups.map((g) => ({ groupId: g.groupId, state: g.state, memberCount: g.members.length }));
    },
    async groupOffsets(groupId, topics) {
      const committed = await admin.fetchOffsets({ groupId, topics: [...topics] });
      return committed.map(({ topic, partitions }) => ({
        topic,
        // Kafka answers -1 for a partition the group has committed nothing in.
        partitions: partitions.map(({ partition, offset }) => ({
          partition,
          offset: BigInt(offset) >= 0n ? BigInt(offset) : null,
        })),
      }));
    },
    close: () => admin.disconnect(),
  };
}

/**
 * A connected admin for `config` on its own kafkajs client, for infra/ code that has no
 * transport (the topic apply, the probe); streams/ and cli/ use `KafkaTransport.admin()`.
 */
export async function openKafkajsAdmin(config: KafkaConnectionConfig): Promise<KafkaAdmin> {
  return kafkajsAdmin(await connectKafkajsAdmin(config));
}
