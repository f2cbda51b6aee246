/**
 * Sharded generators as a user runs them: `spa generate --shard i/n --out kafka` child processes
 * against a real 3-broker cluster. (a) Shards 0/2 and 1/2 together commit the same records as one unsharded
 * `spa generate` with the same flags; (b) a shard SIGKILLed mid-run and restarted with the same
 * flags still leaves every trajectory exactly once on every topic (read_committed).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, stopCluster } from '../../infra/kafka/cluster.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import { spaTopicNames, spaTopics } from '../../schemas/topics.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { plannedTrajectoryIds } from '../../streams/episodes/episodes.js';
import { groupsOfShard, type Shard } from '../../streams/episodes/shard.js';
import { committedTrajectoryIds } from '../../streams/kafka/committed-trajectories.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import type { KafkaTransport } from '../../infra/kafka/client/transport.js';
import { freezeMidRun, spawnGenerator, type GeneratorProcess } from './generator-process.js';
import { testConnection } from './harness.js';
import { readAllRecords } from './read-records.js';

/** A Kafka the suite runs against: its bootstrap brokers and how to stop it. */
interface TestKafka {
  readonly brokers: readonly string[];
  stop(): Promise<void>;
}

/**
 * The Kafka under test: a fresh local 3-broker cluster on this suite's own ports (19360–19365),
 * topics with 3 copies and min.insync.replicas 2, as a scaled-out deployment runs them.
 */
const cluster = { name: 'test-genshards', brokers: 3, port: 19360 };
async function startKafka(): Promise<TestKafka> {
  await stopCluster(cluster); // left running by an interrupted run
  const { brokers } = await startCluster({ ...cluster, fresh: true, startTimeoutMs: 180_000, log: () => {} });
  return { brokers, stop: async () => void (await stopCluster(cluster)) };
}

/** The run every generator in this file plays: 160 groups, 1,280 trajectories. */
const run = { runId: 'shards-run', env: 'sokoban', groups: 16, groupSize: 8, batches: 10 } as const;
const totalGroups = run.groups * run.batches;
const total = totalGroups * run.groupSize;
/** Topic prefixes: the unsharded reference, the two shards, and the two shards with a kill. */
const wholePrefix = 'spa.whole.';
const shardedPrefix = 'spa.sharded.';
const killedPrefix = 'spa.killed.';

let kafka: TestKafka;
/** The reader of every topic. */
let transport: KafkaTransport;

/** `spa generate` of `run` into the topics of `prefix` (one shard of it, if given), as a child process. */
function spaGenerate(prefix: string, shard: Shard | undefined): GeneratorProcess {
  const args = ['--env', run.env, '--policy', 'random', '--out', 'kafka', '--topic-prefix', prefix];
  args.push('--run-id', run.runId, '--groups', String(run.groups), '--group-size', String(run.groupSize));
  args.push('--batches', String(run.batches));
  if (shard) args.push('--shard', `${shard.index}/${shard.count}`);
  return spawnGenerator(args, kafka.brokers);
}

/** What `spa generate --out kafka` prints last: its counts and how many an earlier attempt had committed. */
interface GenerateResult {
  readonly counts: Counts;
  readonly resumed: number;
  readonly transactionalId: string;
}

async function succeeded(generation: GeneratorProcess): Promise<GenerateResult> {
  const result = await generation.exited;
  expect(result.code, result.stderr.slice(-2000)).toBe(0);
  return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as GenerateResult;
}

/** A record as a comparable line: its key and fields, less the wall-clock `created_at`. */
function line(key: string, record: unknown): string {
  return `${key} ${JSON.stringify(record, (field, value: unknown) =>
    field === 'created_at' ? undefined : typeof value === 'bigint' ? value.toString() : value,
  )}`;
}

/** Records per topic. */
interface Counts {
  readonly trajectories: number;
  readonly sft: number;
  readonly dlq: number;
}

/**
 * Every committed record of the prefix's trajectories, sft and dlq topics, as sorted lines per
 * topic; each read waits (up to 15 s) for the `expected` count, as commit markers land a moment
 * after a commit returns.
 */
async function committedRecords(prefix: string, expected: Counts) {
  const connection = { transport, config: testConnection(kafka.brokers) };
  const topics = spaTopicNames({ prefix });
  const trajectories = await readAllRecords(
    connection,
    topics.trajectories,
    'Trajectory',
    expected.trajectories,
  );
  const sft = await readAllRecords(connection, topics.sft, 'SftRow', expected.sft);
  const dlq = await readAllRecords(connection, topics.dlq, 'Rejected', expected.dlq);
  return {
    trajectoryIds: trajectories.map((t) => t.trajectory_id),
    trajectories: trajectories.map((t) => line(t.trajectory_id, t)).sort(),
    sft: sft.map((row) => line(row.trajectory_id, row)).sort(),
    dlq: dlq.map((rejected) => line(rejected.reason, rejected)).sort(),
  };
}

let reference: Awaited<ReturnType<typeof committedRecords>>;
const referenceCounts = (): Counts => ({
  trajectories: reference.trajectories.length,
  sft: reference.sft.length,
  dlq: reference.dlq.length,
});

beforeAll(async () => {
  kafka = await startKafka();
  for (const prefix of [wholePrefix, shardedPrefix, killedPrefix])
    await applyTopicsTo(kafka.brokers, spaTopics({ prefix }));
  transport = kafkaTransport(testConnection(kafka.brokers));
  // The reference: one unsharded generator with the same flags.
  const whole = await succeeded(spaGenerate(wholePrefix, undefined));
  expect(whole.counts.trajectories).toBe(total);
  reference = await committedRecords(wholePrefix, whole.counts);
  expect(new Set(reference.trajectoryIds).size).toBe(total);
  expect(reference.sft.length).toBeGreaterThan(total); // several rows per trajectory
});

afterAll(async () => {
  await transport?.close();
  await kafka?.stop();
});

describe('spa generate --shard i/n', () => {
  it('two shards commit the same trajectories and rows as one unsharded generator', async () => {
    const shards = [0, 1].map((index) => spaGenerate(shardedPrefix, { index, count: 2 }));
    const results = await Promise.all(shards.map(succeeded));
    expect(results.map((r) => r.counts.trajectories)).toEqual([
      groupsOfShard(totalGroups, { index: 0, count: 2 }) * run.groupSize,
      groupsOfShard(totalGroups, { index: 1, count: 2 }) * run.groupSize,
    ]);
    expect(new Set(results.map((r) => r.transactionalId)).size).toBe(2);

    const sharded = await committedRecords(shardedPrefix, referenceCounts());
    expect(sharded.trajectoryIds).toHaveLength(total);
    expect(new Set(sharded.trajectoryIds)).toEqual(new Set(reference.trajectoryIds));
    // The same records, not only the same ids (per-trajectory random streams, envs/rng.ts).
    expect(sharded.trajectories).toEqual(reference.trajectories);
    expect(sharded.sft).toEqual(reference.sft);
    expect(sharded.dlq).toEqual(reference.dlq);
  });

  it('a shard SIGKILLed mid-run and restarted with the same flags leaves every group exactly once', async () => {
    const killed: Shard = { index: 1, count: 2 };
    const shardTotal = groupsOfShard(totalGroups, killed) * run.groupSize;
    const other = spaGenerate(killedPrefix, { index: 0, count: 2 });
    const victim = spaGenerate(killedPrefix, killed);
    // Frozen with part of the shard committed, so the kill cuts it mid-run on any machine.
    const connection = { transport, config: testConnection(kafka.brokers) };
    const topic = spaTopicNames({ prefix: killedPrefix }).trajectories;
    const shardIds = new Set(plannedTrajectoryIds(episodeConfig({ ...run, shard: killed })));
    const committedOfShard = async () =>
      [...(await committedTrajectoryIds(connection, topic, run.runId))].filter((id) => shardIds.has(id))
        .length;
    const killedAt = await freezeMidRun(victim, committedOfShard, shardTotal);
    victim.kill();
    const death = await victim.exited;
    expect(death.signal).toBe('SIGKILL');

    const restarted = await succeeded(spaGenerate(killedPrefix, killed));
    const first = await succeeded(other);
    console.info(
      `[generator-shards] shard 1/2 killed with ${killedAt}/${shardTotal} trajectories committed; ` +
        `the restart found ${restarted.resumed} committed and played ${restarted.counts.trajectories}`,
    );
    // The kill really came mid-run: part of the shard was committed, part was not.
    expect(restarted.resumed).toBeGreaterThan(0);
    expect(restarted.resumed).toBeLessThan(shardTotal);
    expect(restarted.resumed + restarted.counts.trajectories).toBe(shardTotal);
    expect(first.counts.trajectories).toBe(total - shardTotal);

    const after = await committedRecords(killedPrefix, referenceCounts());
    expect(after.trajectoryIds).toHaveLength(total); // nothing doubled…
    expect(new Set(after.trajectoryIds)).toEqual(new Set(reference.trajectoryIds)); // …nothing lost
    expect(after.trajectories).toEqual(reference.trajectories);
    expect(after.sft).toEqual(reference.sft);
    expect(after.dlq).toEqual(reference.dlq);
  });
});
