/**
 * The @platformatic/kafka implementation of the admin port ({@link KafkaAdmin}, admin.ts), the
 * second one beside kafkajs-admin.ts: each operation is one or two calls of the library's
 * `Admin`, with its maps and arrays turned into the port's plain objects. Errors pass on as
 * they come, a retriable one flagged `retriable: true` (platformatic-client.ts). Offsets are
 * listed read_committed, as kafkajs does, so a partition's `high` is its last stable offset.
 */
import { Admin, ConfigResourceTypes, FetchIsolationLevels, ListOffsetTimestamps } from '@platformatic/kafka';
import type { KafkaAdmin } from './admin.js';
import type { KafkaConnectionConfig } from './client-config.js';
import { flagRetriable, platformaticBaseOptions, platformaticErrorHas } from './platformatic-client.js';

/** Kafka's group state names, from the upper-cased form the library reports (`PREPARINGREBALANCE`). */
const groupStates = new Map(
  ['Stable', 'Empty', 'Dead', 'PreparingRebalance', 'CompletingRebalance', 'Assigning', 'Reconciling'].map(
    (state) => [state.toUpperCase(), state],
  ),
);

function groupState(reported: string): string {
  return groupStates.get(reported.replaceAll('_', '').toUpperCase()) ?? reported;
}

/** Runs one admin call, flagging a retriable failure the way kafkajs does. */
async function call<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw flagRetriable(error);
  }
}

/** The port over a platformatic `Admin`; `close()` closes that client. */
export function platformaticAdmin(admin: Admin): KafkaAdmin {
  const partitionsOf = async (topic: string): Promise<number[]> => {
    const metadata = await admin.metadata({ topics: [topic], forceUpdate: true });
    const count = metadata.topics.get(topic)?.partitionsCount ?? 0;
    return Array.from({ length: count }, (_, i) => i);
  };
  const listOffsets = async (topic: string, timestamp: bigint): Promise<Map<number, bigint>> => {
    const partitions = await partitionsOf(topic);
    const listed = await admin.listOffsets({
      topics: [
        { name: topic, partitions: partitions.map((partitionIndex) => ({ partitionIndex, timestamp })) },
      ],
      isolationLevel: FetchIsolationLevels.READ_COMMITTED,
    });
    const found = listed.find((t) => t.name === topic)?.partitions ?? [];
    return new Map(found.map((p) => [p.partitionIndex, p.offset]));
  };
  return {
    listTopics: () => call(() => admin.listTopics({ includeInternals: true })),
    brokers: () =>
      call(async () => {
        const metadata = await admin.metadata({ topics: [], forceUpdate: true });
        return [...metadata.brokers].map(([nodeId, { host, port }]) => ({ nodeId, host, port }));
      }),
    describeTopics: (topics) =>
      call(async () => {
        const metadata = await admin.metadata({ topics: [...topics], forceUpdate: true });
        return topics.map((name) => ({
          name,
          partitions: (metadata.topics.get(name)?.partitions ?? []).map((p, partition) => ({
            partition,
            leader: p.leader >= 0 ? p.leader : null,
            replicas: p.replicas,
          })),
        }));
      }),
    topicConfigs: (topics) =>
      call(async () => {
        const described = await admin.describeConfigs({
          includeSynonyms: false,
          resources: topics.map((resourceName) => ({
            resourceType: ConfigResourceTypes.TOPIC,
            resourceName,
          })),
        });
        return new Map(
          described.map((d) => [
            d.resourceName,
            Object.fromEntries(
              d.configs.flatMap((c) => (c.value == null ? [] : [[c.name, c.value] as const])),
            ),
          ]),
        );
      }),
    async createTopics(topics) {
      // One request per topic: the library gives every topic of a request the same shape.
      for (const t of topics) {
        try {
          await admin.createTopics({
            topics: [t.name],
            partitions: t.partitions,
            replicas: t.replicationFactor,
            configs: Object.entries(t.configs).map(([name, value]) => ({ name, value })),
          });
        } catch (error) {
          // kafkajs resolves for a topic that exists already; so does this port.
          if (!platformaticErrorHas(error, 'apiId', 'TOPIC_ALREADY_EXISTS')) throw flagRetriable(error);
        }
      }
    },
    replaceTopicConfigs: (topics) =>
      call(() =>
        admin.alterConfigs({
          validateOnly: false,
          resources: topics.map((t) => ({
            resourceType: ConfigResourceTypes.TOPIC,
            resourceName: t.name,
            configs: Object.entries(t.configs).map(([name, value]) => ({ name, value })),
          })),
        }),
      ),
    deleteTopics: (topics) => call(() => admin.deleteTopics({ topics: [...topics] })),
    topicOffsets: (topic) =>
      call(async () => {
        const low = await listOffsets(topic, ListOffsetTimestamps.EARLIEST);
        const high = await listOffsets(topic, ListOffsetTimestamps.LATEST);
        return [...high.keys()]
          .sort((a, b) => a - b)
          .map((partition) => ({
            partition,
            low: low.get(partition) ?? 0n,
            high: high.get(partition) ?? 0n,
          }));
      }),
    offsetsForTimestamp: (topic, timestamp) =>
      call(async () => {
        const byTime = await listOffsets(topic, BigInt(timestamp));
        const high = await listOffsets(topic, ListOffsetTimestamps.LATEST);
        // Kafka answers -1 where no record is that recent: the partition's end, as kafkajs gives.
        return [...high.keys()]
          .sort((a, b) => a - b)
          .map((partition) => {
            const offset = byTime.get(partition) ?? -1n;
            return { partition, offset: offset >= 0n ? offset : (high.get(partition) ?? 0n) };
          });
      }),
    deleteRecords: (topic, partitions) =>
      call(async () => {
        await admin.deleteRecords({ topics: [{ name: topic, partitions: [...partitions] }] });
      }),
    listGroups: () =>
      call(async () =>
        [...(await admin.listGroups()).values()].map((g) => ({
          groupId: g.id,
          protocolType: g.protocolType,
        })),
      ),
    describeGroups: (groupIds) =>
      call(async () => {
        const groups = await admin.describeGroups({ groups: [...groupIds] });
        return [...groups.values()].map((g) => ({
          groupId: g.id,
          state: groupState(g.state),
          memberCount: g.members.size,
        }));
      }),
    groupOffsets: (groupId, topics) =>
      call(async () => {
        const requested = await Promise.all(
          topics.map(async (name) => ({ name, partitionIndexes: await partitionsOf(name) })),
        );
        const [group] = await admin.listConsumerGroupOffsets({ groups: [{ groupId, topics: requested }] });
        return requested.map(({ name, partitionIndexes }) => {
          const committed = group?.topics.find((t) => t.name === name)?.partitions ?? [];
          return {
            topic: name,
            // Kafka answers -1 for a partition the group has committed nothing in.
            partitions: partitionIndexes.map((partition) => {
              const offset = committed.find((p) => p.partitionIndex === partition)?.committedOffset ?? -1n;
              return { partition, offset: offset >= 0n ? offset : null };
            }),
          };
        });
      }),
    close: () => admin.close(),
  };
}

/** A platformatic `Admin` client for `config` (it connects on first use); the caller closes it. */
export function platformaticAdminClient(config: KafkaConnectionConfig): Admin {
  return new Admin(platformaticBaseOptions(config));
}
