/**
 * Issue 42 item 3: records a topic cannot take never stall a producer. Two ~1 MB records ended
 * `spa replay` with exit 1 and 0 rows replayed, although one alone was dead-lettered fine: both dead
 * letters went in one record batch, and the broker checks `max.message.bytes` per batch. Here the
 * limits are 64 KiB (set on the topics, so the records stay small): two 40 KiB records that fit
 * alone but not together, one 100 KiB record whose dead letter cannot fit whole, and a trajectory
 * whose SFT rows are each over the target's limit. Every good row is replayed; what cannot fit goes
 * to the DLQ as `too-large`, naming its source offset, its payload truncated; the summary names it.
 * The generator's sink (`publishOutbound`) does the same with a trajectory over its topic's limit.
 */
import { createHash } from 'node:crypto';
import { from, lastValueFrom, of, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envFactory } from '../../envs/registry.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import { builtinPolicy } from '../../policies/builtin.js';
import type { Rejected, Trajectory } from '../../schemas/index.js';
import type { Outbound } from '../../schemas/outbound.js';
import { spaTopicNames, spaTopics, type TopicRole } from '../../schemas/topics.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { generatorPipeline } from '../../streams/generator-pipeline.js';
import type { KafkaConnection } from '../../streams/kafka/consume-spa.js';
import { publishOutbound } from '../../streams/kafka/publish-outbound.js';
import { toKafkaRecord } from '../../streams/kafka/spa-records.js';
import { toSftOutputs } from '../../streams/sft-outputs.js';
import { runSpa } from '../cli/spa-process.js';
import { startTestBroker, stopTestBroker, testConnection } from '../kafka/harness.js';
import { readAllRecords } from '../kafka/read-records.js';

const ports = { port: 19780, controllerPort: 19781 };
const LIMIT = 64 * 1024;
const small = { 'max.message.bytes': String(LIMIT) };
let brokers: readonly string[];
let kafka: KafkaConnection;

/** Bytes that do not compress (so gzip cannot bring a record under the limit), the same every run. */
function noise(bytes: number, seed: string): Buffer {
  const blocks = Array.from({ length: Math.ceil(bytes / 32) }, (_, i) =>
    createHash('sha256').update(`${seed}/${i}`).digest(),
  );
  return Buffer.concat(blocks).subarray(0, bytes);
}

/** `trajectory` renamed, its system message padded with 120 KB of noise: every SFT row of it is over 64 KiB. */
function padded(trajectory: Trajectory, id: string): Trajectory {
  const [system, ...rest] = trajectory.messages;
  const content = `${system!.content}${noise(90_000, id).toString('base64')}`;
  return { ...trajectory, trajectory_id: id, messages: [{ ...system!, content }, ...rest] };
}

/** Topics with the roles in `limited` at 64 KiB. */
function topicsWith(prefix: string, limited: readonly TopicRole[]) {
  return spaTopics({ prefix }).map((t) =>
    limited.includes(t.role) ? { ...t, configs: { ...t.configs, ...small } } : t,
  );
}

/** Some world-model trajectories of the random policy, as the generator makes them. */
async function playedTrajectories(runId: string): Promise<Trajectory[]> {
  const episodes = episodeConfig({ env: 'sokoban', groups: 2, groupSize: 2, batches: 1, runId, mode: 'wm' });
  const outputs = generatorPipeline(
    episodes,
    envFactory({ name: 'sokoban', puzzles: 'generated' }),
    builtinPolicy('random', { mode: 'wm', seed: 7 }),
    { target: 'sft' },
  );
  const all = await lastValueFrom(outputs.pipe(toArray()));
  return all.flatMap((o) => (o.topic === 'trajectories' ? [o.record] : []));
}

/** What replay makes of `trajectories`: SFT rows, and dead letters of rejected rows. */
async function outputsOf(trajectories: readonly Trajectory[]): Promise<{ rows: number; letters: number }> {
  const outputs = await lastValueFrom(from(trajectories).pipe(toSftOutputs({}, Date.now), toArray()));
  const rows = outputs.filter((o) => o.topic === 'sft').length;
  return { rows, letters: outputs.length - rows };
}

beforeAll(async () => {
  brokers = (await startTestBroker('hostile-too-large', ports)).brokers;
  const config = testConnection(brokers);
  kafka = { transport: kafkaTransport(config), config };
}, 240_000);

afterAll(async () => {
  await kafka?.transport.close();
  await stopTestBroker('hostile-too-large', ports);
});

describe('spa replay of a topic with records over the broker limit', () => {
  const topics = spaTopicNames({ prefix: 'spa.big.' });
  const target = 'ablation.big.gt';
  let goodRows: number;
  /** The padded trajectory's outputs, rows and dead letters: each over its topic's limit. */
  let bigOutputs: number;
  /** …of which SFT rows (over the target's limit; the rest are dead letters over the DLQ's). */
  let bigRows: number;
  /** Source offset by key (all in partition 0, in the order written). */
  const offsets = new Map<string, number>();
  const source = (key: string) => `${topics.trajectories}[0]@${offsets.get(key)}`;

  beforeAll(async () => {
    await applyTopicsTo(brokers, [
      ...topicsWith('spa.big.', ['dlq']),
      ...spaTopics({ names: { sft: target } })
        .filter((t) => t.role === 'sft')
        .map((t) => ({ ...t, configs: { ...t.configs, ...small } })),
    ]);
    const played = await playedTrajectories('big-replay');
    const big = padded(played[0]!, 'big-replay/padded');
    goodRows = (await outputsOf(played)).rows;
    const outputsOfBig = await outputsOf([big]);
    bigOutputs = outputsOfBig.rows + outputsOfBig.letters;
    bigRows = outputsOfBig.rows;
    expect(goodRows).toBeGreaterThan(0);
    expect(outputsOfBig.rows).toBeGreaterThan(0);
    const garbage = (key: string, bytes: number) => ({
      topic: topics.trajectories,
      key: Buffer.from(key),
      value: noise(bytes, key),
      partition: 0,
    });
    const trajectory = (t: Trajectory) => ({
      ...toKafkaRecord({ topic: 'trajectories', key: t.trajectory_id, record: t }, topics.trajectories),
      partition: 0,
    });
    const records = [
      ...played.map(trajectory),
      garbage('pair-a', 40 * 1024), // fit the DLQ alone, not together
      garbage('pair-b', 40 * 1024),
      garbage('huge', 100 * 1024), // its dead letter cannot fit whole
      trajectory(big),
    ];
    records.forEach((r, offset) => offsets.set(r.key!.toString(), offset));
    const sink = await kafka.transport.sink();
    await sink.send(records);
    await sink.close();
  }, 240_000);

  it('replays every good row and dead-letters what does not fit as too-large, naming the offsets', async () => {
    const result = await runSpa(
      ['replay', '--from-topic', topics.trajectories, '--dlq-topic', topics.dlq, '--to-topic', target],
      brokers,
    );
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout.trim()) as {
      rows: number;
      rejected: Record<string, number>;
      tooLarge: { source: string; key: string; detail: string }[];
    };
    expect(summary.rows).toBe(goodRows);
    expect(summary.rejected).toMatchObject({ 'bad-magic': 2, 'too-large': 1 + bigOutputs });
    expect(result.stderr).toContain(`dead-lettered ${1 + bigOutputs} records too large`);
    expect(summary.tooLarge).toContainEqual(expect.objectContaining({ source: source('huge'), key: 'huge' }));
    const fromBig = summary.tooLarge.filter((n) => n.source === source('big-replay/padded'));
    expect(fromBig).toHaveLength(bigOutputs);

    expect(await readAllRecords(kafka, target, 'SftRow', goodRows)).toHaveLength(goodRows);
    const letters = await readAllRecords(kafka, topics.dlq, 'Rejected', 3 + bigOutputs);
    const byKey = (key: string): Rejected[] => letters.filter((l) => l.key === key);
    // The pair: each whole, as one alone always was.
    for (const key of ['pair-a', 'pair-b']) {
      expect(byKey(key).map((l) => [l.reason, l.payload.length])).toEqual([['bad-magic', 40 * 1024]]);
    }
    // The huge one's dead letter: reason, source offset, a truncated payload that says so.
    const [huge] = byKey('huge');
    expect(huge).toMatchObject({ reason: 'too-large', source: source('huge') });
    expect(huge!.detail).toMatch(
      /dead letter \(bad-magic\) of [\d,]+ bytes .* over spa\.big\.dlq's max\.message\.bytes 65,536; payload truncated to its first [\d,]+ of [\d,]+ bytes/,
    );
    expect(huge!.payload.length).toBeGreaterThan(0);
    expect(huge!.payload.length).toBeLessThan(LIMIT);
    // The padded trajectory's outputs: each over its topic's limit, dead-lettered from its offset.
    const big = letters.filter((l) => l.source === source('big-replay/padded'));
    expect(big).toHaveLength(bigOutputs);
    for (const letter of big) {
      expect(letter.reason).toBe('too-large');
      expect(letter.detail).toMatch(
        /^a (sft record|dead letter \(malformed-turn\)) of [\d,]+ bytes .* over /,
      );
      expect(letter.detail).toMatch(/; payload truncated to its first [\d,]+ of [\d,]+ bytes$/);
    }
    const overTarget = big.filter((l) => l.detail.includes(`over ${target}'s max.message.bytes 65,536`));
    expect(overTarget).toHaveLength(bigRows);
  });
});

describe("the generator's sink on a trajectory over its topic's limit", () => {
  it('publishes the rest and dead-letters it as too-large', async () => {
    const prefix = 'spa.gen.';
    const topics = spaTopicNames({ prefix });
    await applyTopicsTo(brokers, topicsWith(prefix, ['trajectories', 'dlq']));
    const [first, second] = await playedTrajectories('big-gen');
    const big = padded(second!, 'big-gen/padded');
    const outbound: Outbound[] = [
      { topic: 'trajectories', key: first!.trajectory_id, record: first! },
      { topic: 'trajectories', key: big.trajectory_id, record: big },
    ];
    const sink = await kafka.transport.sink({ transactionalId: 'big-gen' });
    const counts = await publishOutbound(of(...outbound), sink, { topics });
    await sink.close();
    expect(counts).toMatchObject({ trajectories: 1, dlq: 1 });
    const kept = await readAllRecords(kafka, topics.trajectories, 'Trajectory', 1);
    expect(kept.map((t) => t.trajectory_id)).toEqual([first!.trajectory_id]);
    const [letter] = await readAllRecords(kafka, topics.dlq, 'Rejected', 1);
    expect(letter).toMatchObject({
      key: big.trajectory_id,
      reason: 'too-large',
      source: topics.trajectories,
    });
    expect(letter!.detail).toMatch(
      /^a trajectories record of [\d,]+ bytes .* over spa\.gen\.trajectories's max\.message\.bytes 65,536; payload truncated to its first [\d,]+ of [\d,]+ bytes$/,
    );
    // At most the first 64 KiB (gzip, the generator's compression, fits that much of base64 text in
    // the dead-letter topic's 64 KiB), never the whole record.
    expect(letter!.payload.length).toBeLessThanOrEqual(64 * 1024);
  });
});
