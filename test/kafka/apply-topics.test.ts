/**
 * applyTopics just after a cluster starts: a broker missing from the metadata for a moment must
 * not leave a topic with fewer replicas for good (a cluster-fault.slow.test.ts flake: [2, 3]).
 * And after an alter, it returns once a describe shows the new configs, so the next apply finds
 * nothing to do (a transport.slow.test.ts flake on a loaded box).
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

/** An admin whose topic `t` has retention 1000 until altered, and describes the old configs `lag` more times. */
function laggingConfigs(lag: number) {
  let configs: Record<string, string> = { 'retention.ms': '1000' };
  let staleDescribes = 0;
  let describes = 0;
  const admin = {
    brokers: async () => [{ nodeId: 1, host: '127.0.0.1', port: 19000 }],
    listTopics: async () => ['t'],
    describeTopics: async () => [{ name: 't', partitions: [{ partitionId: 0, leader: 1, replicas: [1] }] }],
    topicConfigs: async () => {
      describes += 1;
      if (staleDescribes > 0) {
        staleDescribes -= 1;
        return new Map([['t', { 'retention.ms': '1000' }]]);
      }
      return new Map([['t', configs]]);
    },
    replaceTopicConfigs: async (topics: readonly { name: string; configs: Record<string, string> }[]) => {
      configs = { ...topics[0]!.configs };
      staleDescribes = lag;
    },
  } as unknown as KafkaAdmin;
  return { admin, describes: () => describes };
}

describe('applyTopics altering a config', () => {
  it('returns once the broker describes the new value: the next apply has nothing to do', async () => {
    const kept: TopicDefinition = { ...definition, configs: { 'retention.ms': '-1' } };
    const cluster = laggingConfigs(3);
    const repaired = await applyTopics(cluster.admin, [kept]);
    expect(repaired.summary).toBe('altered t (retention.ms: 1000 -> -1)');
    expect(cluster.describes()).toBe(1 + 4); // the plan's, then 3 stale and the new one
    expect((await applyTopics(cluster.admin, [kept])).changes).toEqual([]);
  });
});
