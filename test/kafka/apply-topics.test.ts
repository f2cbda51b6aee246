/**
 * applyTopics just after a cluster starts: a broker missing from the metadata for a moment must
 * not leave a topic with fewer replicas for good (a cluster-fault.slow.test.ts flake: [2, 3]).
 */
import { describe, expect, it } from 'vitest';
import type { KafkaAdmin } from '../../infra/kafka/client/admin.js';
import { applyTopics } from '../../infra/kafka/topics.js';
import type { TopicDefinition } from '../../schemas/topics.js';

/** An admin whose cluster reports `live[i]` brokers on the i-th ask (the last one after that). */
function startingCluster(live: readonly number[]) {
  let asks = 0;
  const created: { name: string; replicationFactor: number }[] = [];
  const admin = {
    brokers: async () =>
      Array.from({ length: live[Math.min(asks++, live.length - 1)]! }, (_, i) => ({
        nodeId: i + 1,
        host: '127.0.0.1',
        port: 19000 + i,
      })),
    listTopics: async () => created.map((t) => t.name),
    describeTopics: async (names: readonly string[]) =>
      names.map((name) => ({ name, partitions: [{ partitionId: 0, leader: 1, replicas: [1, 2, 3] }] })),
    topicConfigs: async () => new Map(),
    createTopics: async (topics: readonly { name: string; replicationFactor: number }[]) =>
      void created.push(...topics),
  } as unknown as KafkaAdmin;
  return { admin, created, asks: () => asks };
}

const definition: TopicDefinition = { role: 'sft', name: 't', partitions: 1, configs: {} };

describe('applyTopics on a cluster still starting', () => {
  it('waits for the expected brokers before creating: 3 replicas, not 2', async () => {
    const cluster = startingCluster([2, 2, 3]);
    await applyTopics(cluster.admin, [definition], 3);
    expect(cluster.created).toMatchObject([{ name: 't', replicationFactor: 3 }]);
    expect(cluster.asks()).toBe(3);
  });

  it('does not wait when it was given one broker', async () => {
    const cluster = startingCluster([1]);
    await applyTopics(cluster.admin, [definition]);
    expect(cluster.created).toMatchObject([{ name: 't', replicationFactor: 1 }]);
    expect(cluster.asks()).toBe(1);
  });
});
