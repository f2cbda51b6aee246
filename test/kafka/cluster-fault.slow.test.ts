/**
 * A local 3-broker cluster (infra/kafka/cluster.ts) under the generator: SPA's topics get 3
 * replicas and min.insync.replicas 2, and when the broker coordinating the generator's
 * transactions is SIGKILLed mid-run and restarted, every topic read read_committed holds each of
 * the run's records exactly once — Kafka's replication plus the transactional producer, end to end.
 *
 * Needs the produce fix of patches/kafkajs+2.2.4.patch (producer/sendMessages.js): kafkajs 2.2.4
 * remembered a produce retry's answers per broker, so after the coordinator's death moved partition
 * leaders it skipped moved partitions whose new leader had answered for others (lost records, yet
 * the send resolved) and re-sent answered ones (duplicates); unpatched this test failed 3 runs of
 * 3 (675, 769 and 756 records for 640 trajectories). Patched, answers are kept per partition and
 * every request of an attempt settles before the retry. Its admin fix (admin/index.js: ListOffsets
 * refreshes metadata on NOT_LEADER_FOR_PARTITION / LEADER_NOT_AVAILABLE) serves the offset reads
 * after the leaders moved.
 */
import kafkajs from 'kafkajs';
import { lastValueFrom, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envFactory } from '../../envs/registry.js';
import { killBroker, startBroker } from '../../infra/kafka/broker.js';
import { clusterNodes, startCluster, stopCluster } from '../../infra/kafka/cluster.js';
import type { KafkaConnectionConfig } from '../../infra/kafka/client/config.js';
import { connectKafkajsAdmin } from '../../infra/kafka/client/kafkajs-client.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import type { Outbound } from '../../schemas/outbound.js';
import { spaTopicNames, spaTopics } from '../../schemas/topics.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { generatorPipeline } from '../../streams/generator-pipeline.js';
import { generateToKafka, type GeneratorRun } from '../../streams/generator-sinks.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import type { SpaKafka } from '../../streams/kafka/spa-kafka.js';
import type { Policy } from '../../policies/policy.js';
import { randomPolicy } from '../../policies/random-policy.js';
import { testConnection } from './harness.js';
import { readAllRecords } from './read-records.js';

const { ConfigResourceTypes } = kafkajs;

const cluster = { name: 'test-cluster-fault', brokers: 3, port: 19300 };
const config = episodeConfig({ env: 'sokoban', runId: 'fault-run', groups: 16, groupSize: 8, batches: 5 });
const total = config.groups * config.groupSize * config.batches;
const topics = spaTopicNames();
let brokers: readonly string[];
let connection: KafkaConnectionConfig;

beforeAll(async () => {
  await stopCluster(cluster); // left running by an interrupted run
  ({ brokers } = await startCluster({ ...cluster, fresh: true, startTimeoutMs: 180_000, log: () => {} }));
  await applyTopicsTo(brokers, spaTopics());
  // Patient retries: the producer rides out a dead leader and a moving coordinator.
  connection = testConnection(brokers, {
    retry: { retries: 12, initialRetryTimeMs: 200, maxRetryTimeMs: 4000 },
  });
}, 240_000);

afterAll(async () => {
  await stopCluster(cluster);
}, 120_000);

/** Java's String.hashCode, as Kafka places a transactional id on a __transaction_state partition. */
function javaStringHash(text: string): number {
  let hash = 0;
  for (let i = 0; i < text.length; i++) hash = (Math.imul(31, hash) + text.charCodeAt(i)) | 0;
  return hash;
}

/** The broker coordinating `id`'s transactions: the leader of its __transaction_state partition. */
async function transactionCoordinator(id: string): Promise<number> {
  const admin = await connectKafkajsAdmin(connection);
  try {
    const {
      topics: [state],
    } = await admin.fetchTopicMetadata({ topics: ['__transaction_state'] });
    const hash = javaStringHash(id);
    // TransactionStateManager.partitionFor: Utils.abs(hashCode) % partition count.
    const partition = (hash === -2147483648 ? 0 : Math.abs(hash)) % (state?.partitions.length ?? 1);
    const leader = state?.partitions.find((p) => p.partitionId === partition)?.leader;
    if (leader === undefined || leader < 1) throw new Error(`__transaction_state-${partition} has no leader`);
    return leader;
  } finally {
    await admin.disconnect();
  }
}

/** What the run publishes, by topic: played once without Kafka (the random policy is seeded). */
async function expectedOutputs(): Promise<Record<string, string[]>> {
  const outputs = await lastValueFrom(
    generatorPipeline(config, envFactory({ name: 'sokoban' }), randomPolicy({ seed: 7 }), {
      target: 'sft',
    }).pipe(toArray()),
  );
  return {
    trajectories: idsOf(outputs, 'trajectories'),
    sft: idsOf(outputs, 'sft'),
    dlq: idsOf(outputs, 'dlq'),
  };
}

function idsOf(outputs: readonly Outbound[], topic: Outbound['topic']): string[] {
  return outputs
    .filter((o) => o.topic === topic)
    .map((o) => (o.topic === 'sft' ? `${o.record.trajectory_id}#${o.record.turn}` : o.key))
    .sort();
}

/**
 * Retries `look` for up to a minute: a topic just created reaches each broker's metadata a moment
 * apart, and a broker that has not seen it yet answers UNKNOWN_TOPIC_OR_PARTITION.
 */
async function settled<T>(look: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await look();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

describe('a local 3-broker cluster', () => {
  // The topic apply and the brokers' settings; no transport involved (the topic apply is kafkajs').
  it('creates SPA topics with 3 replicas and min.insync.replicas 2, and replicates Kafka transaction and offset logs 3 times', async () => {
    const admin = await connectKafkajsAdmin(connection);
    try {
      const names = Object.values(topics);
      const { topics: found } = await settled(() => admin.fetchTopicMetadata({ topics: names }));
      expect(found.map((t) => t.name).sort()).toEqual([...names].sort());
      for (const topic of found) for (const p of topic.partitions) expect(p.replicas).toHaveLength(3);
      const { resources } = await settled(() =>
        admin.describeConfigs({
          includeSynonyms: false,
          resources: [
            ...names.map((name) => ({ type: ConfigResourceTypes.TOPIC, name })),
            ...[1, 2, 3].map((id) => ({ type: ConfigResourceTypes.BROKER, name: String(id) })),
          ],
        }),
      );
      const config = (resource: (typeof resources)[number], name: string): string | undefined =>
        resource.configEntries.find((e) => e.configName === name)?.configValue;
      for (const resource of resources.filter((r) => names.includes(r.resourceName)))
        expect([resource.resourceName, config(resource, 'min.insync.replicas')]).toEqual([
          resource.resourceName,
          '2',
        ]);
      for (const broker of resources.filter((r) => !names.includes(r.resourceName)))
        expect({
          transactionLog: config(broker, 'transaction.state.log.replication.factor'),
          transactionMinIsr: config(broker, 'transaction.state.log.min.isr'),
          offsetsLog: config(broker, 'offsets.topic.replication.factor'),
        }).toEqual({ transactionLog: '3', transactionMinIsr: '2', offsetsLog: '3' });
    } finally {
      await admin.disconnect();
    }
  });
});

// The run kills its transaction coordinator (restarted before the run ends).
describe('a generator on a local 3-broker cluster', () => {
  const transactionalId = `spa-generate-${config.runId}`;
  let kafka: SpaKafka;

  beforeAll(async () => {
    const prefix = 'spa.';
    await applyTopicsTo(brokers, spaTopics({ prefix }));
    const transport = kafkaTransport(connection);
    kafka = {
      config: connection,
      transport,
      topics: spaTopicNames({ prefix }),
      close: () => transport.close(),
    };
  });

  afterAll(async () => {
    await kafka?.close();
  });

  it('commits every record of a generator run exactly once when its transaction coordinator is SIGKILLed mid-run and restarted', async () => {
    const nodes = clusterNodes(cluster);
    const policy: Policy = randomPolicy({ seed: 7 });
    let batch = 0;
    let victim: (typeof nodes)[number] | undefined;
    let restarted: Promise<unknown> = Promise.resolve();
    const timeline: string[] = [];
    const started = Date.now();
    const mark = (what: string): void =>
      void timeline.push(`${((Date.now() - started) / 1000).toFixed(1)} s ${what}`);
    // The policy is resolved before each batch, once the sink has caught up (streams/episodes/
    // episodes.ts): batch 1 is written to the whole cluster, the coordinator dies before batch 2,
    // batch 2 is written (all but the sink's in-flight bound) by the 2 survivors before the
    // restart begins, and batch 4 waits until the restarted broker answers again.
    const run: GeneratorRun = {
      episodes: config,
      makeEnv: envFactory({ name: 'sokoban' }),
      policy: async () => {
        batch += 1;
        if (batch === 2) {
          const coordinator = await transactionCoordinator(transactionalId);
          victim = nodes.find((node) => node.nodeId === coordinator);
          if (!victim) throw new Error(`coordinator ${coordinator} is not a node of the cluster`);
          await killBroker(victim);
          mark(`killed broker ${coordinator}, the transaction coordinator`);
        }
        if (batch === 3 && victim) {
          mark('batch 2 written without it; restarting it');
          restarted = startBroker({ ...victim, startTimeoutMs: 180_000, log: () => {} }).then(() =>
            mark('restarted broker answers'),
          );
        }
        if (batch === 4) await restarted;
        return policy;
      },
      pipeline: { target: 'sft' },
    };
    const counts = await generateToKafka(kafka, transactionalId, run);
    mark('generation finished');
    console.info(`[cluster-fault] ${timeline.join('; ')}`);
    expect(victim).toBeDefined();
    expect(batch).toBe(config.batches);
    expect(counts.trajectories).toBe(total);

    const expected = await expectedOutputs();
    expect(expected.trajectories).toHaveLength(total);
    const trajectories = await readAllRecords(kafka, kafka.topics.trajectories, 'Trajectory', total);
    expect(trajectories.map((t) => t.trajectory_id).sort()).toEqual(expected.trajectories);
    const sft = await readAllRecords(kafka, kafka.topics.sft, 'SftRow', expected.sft?.length);
    expect(sft.map((row) => `${row.trajectory_id}#${row.turn}`).sort()).toEqual(expected.sft);
    const dlq = await readAllRecords(kafka, kafka.topics.dlq, 'Rejected', expected.dlq?.length);
    expect(dlq.map((rejected) => rejected.key).sort()).toEqual(expected.dlq);
  });
});
