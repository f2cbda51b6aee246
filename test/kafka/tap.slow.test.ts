/**
 * `spa tap` and `spa topics` against a real broker: tap prints boards, parse outcomes and
 * reject reasons, filters and limits, commits nothing and leaves no group behind; topics
 * reports record counts and a consumer group's lag.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filter, lastValueFrom, map, toArray } from 'rxjs';
import type { Admin } from 'kafkajs';
import { envFactory } from '../../envs/registry.js';
import { connectKafkajsAdmin } from '../../infra/kafka/client/kafkajs-client.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import type { Trajectory } from '../../schemas/index.js';
import { spaTopicNames, spaTopics } from '../../schemas/topics.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { generatorPipeline } from '../../streams/generator-pipeline.js';
import type { KafkaConnection } from '../../streams/kafka/consume-spa.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import { publishOutbound } from '../../streams/kafka/publish-outbound.js';
import { decodeKafkaRecord, toKafkaRecord } from '../../streams/kafka/spa-records.js';
import { tapTopic, type TapOptions } from '../../cli/tap/tap.js';
import { builtinPolicy } from '../../policies/builtin.js';
import { runSpa, type SpaResult } from '../cli/spa-process.js';
import { startTestBroker, stopTestBroker, testConnection } from './harness.js';

const ports = { port: 19450, controllerPort: 19451 };

// A fresh broker: `spa topics` reports every topic and group on the broker, and SPA's default
// topic names are what it tells apart.
describe('spa tap and spa topics', () => {
  const topics = spaTopicNames();
  let brokers: readonly string[];
  let kafka: KafkaConnection;
  let admin: Admin;
  let trajectories: Trajectory[];

  const cli = (...args: string[]): Promise<SpaResult> => runSpa(args, brokers);

  /** Taps `topic` in-process and returns what it printed, waiting out the post-commit marker lag. */
  async function tapped(options: Partial<TapOptions> & { topic: string }, atLeast = 1): Promise<string[]> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const lines: string[] = [];
      await tapTopic(kafka, {
        start: 'earliest',
        follow: false,
        filters: [],
        json: false,
        write: (t) => lines.push(t),
        ...options,
      });
      if (lines.length >= atLeast || Date.now() > deadline) return lines;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  beforeAll(async () => {
    brokers = (await startTestBroker('tap', ports)).brokers;
    const config = testConnection(brokers);
    await applyTopicsTo(brokers, spaTopics());
    kafka = { transport: kafkaTransport(config), config };
    admin = await connectKafkajsAdmin(config);
    const episodes = episodeConfig({
      env: 'sokoban',
      groups: 3,
      groupSize: 2,
      batches: 1,
      runId: 'tap',
      mode: 'wm',
    });
    const outputs = generatorPipeline(
      episodes,
      envFactory({ name: 'sokoban', puzzles: 'generated' }),
      builtinPolicy('oracle', { mode: 'wm' }),
      { target: 'sft' },
    );
    trajectories = (
      await lastValueFrom(
        outputs.pipe(
          filter((o) => o.topic === 'trajectories'),
          map((o) => o.record as Trajectory),
          toArray(),
        ),
      )
    ).sort((a, b) => a.trajectory_id.localeCompare(b.trajectory_id));
    const sink = await kafka.transport.sink({ transactionalId: 'tap-test' });
    await publishOutbound(outputs, sink, { topics });
    // A dead letter as the consumers make them: corrupt bytes decoded → Rejected on spa.dlq.
    const corrupt = {
      topic: 'raw',
      partition: 0,
      offset: 5n,
      key: Buffer.from('k'),
      value: Buffer.from('garbage'),
      headers: {},
      timestamp: 0,
    };
    const decoded = decodeKafkaRecord('Trajectory', corrupt);
    if (decoded.ok) throw new Error('garbage decoded');
    await sink.transaction((tx) =>
      tx.send([toKafkaRecord({ topic: 'dlq', key: 'k', record: decoded.rejected }, topics.dlq)]),
    );
    await sink.close();
  });

  afterAll(async () => {
    await admin?.disconnect();
    await kafka?.transport.close();
    await stopTestBroker('tap', ports);
  });

  describe('spa tap', () => {
    it('prints each trajectory with its boards, parse outcomes and rewards', async () => {
      const printed = await tapped({ topic: topics.trajectories }, trajectories.length);
      expect(printed).toHaveLength(trajectories.length);
      const first = trajectories[0]!;
      const text = printed.find((p) => p.includes(`Trajectory ${first.trajectory_id}\n`))!;
      expect(text).toContain('board before:');
      // The board is printed line by line, indented, exactly as the model saw it.
      for (const line of first.turns[0]!.state.split('\n')) expect(text).toContain(`      ${line}\n`);
      expect(text).toContain(`turn 0: parse ok (strict match)`);
      expect(text).toContain(`rewards ${first.turns[0]!.rewards.join(', ')}`);
    });

    it('prints a dead letter with its reason and detail (CLI)', async () => {
      const result = await cli('tap', topics.dlq);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('Rejected  reason bad-magic');
      expect(result.stdout).toContain('detail: not an Avro single-object frame');
      expect(result.stdout).toContain('payload 7 bytes: 67 61 72 62 61 67 65');
      expect(result.stderr).toContain('[tap] printed 1 of 1 records');
    });

    it('filters on top-level fields, limits, and prints JSON lines', async () => {
      const slotOne = trajectories.filter((t) => t.slot === 1);
      const lines = await tapped(
        { topic: topics.trajectories, filters: [{ key: 'slot', value: '1' }], json: true },
        slotOne.length,
      );
      const parsed = lines.map((l) => JSON.parse(l) as { type: string; record: Trajectory });
      expect(parsed.map((p) => p.record.trajectory_id).sort()).toEqual(slotOne.map((t) => t.trajectory_id));
      expect(parsed.every((p) => p.type === 'Trajectory')).toBe(true);
      const limited = await tapped({
        topic: topics.sft,
        limit: 2,
        filters: [{ key: 'type', value: 'SftRow' }],
      });
      expect(limited).toHaveLength(2);
      expect(limited[0]).toContain('observation:');
    });

    it('commits nothing and leaves no consumer group behind', async () => {
      await tapped({ topic: topics.trajectories }, trajectories.length);
      const { groups } = await admin.listGroups();
      expect(groups.filter((g) => g.groupId.startsWith('spa-tap-'))).toEqual([]);
    });
  });

  describe('spa topics', () => {
    it('reports record counts and a consumer group lag per topic', async () => {
      const offsets = await admin.fetchTopicOffsets(topics.trajectories);
      const total = offsets.reduce((sum, o) => sum + Number(o.high) - Number(o.low), 0);
      // A group that has read everything except partition 0.
      await admin.setOffsets({
        groupId: 'lag-check',
        topic: topics.trajectories,
        partitions: offsets.map((o) => ({
          partition: o.partition,
          offset: o.partition === 0 ? o.low : o.high,
        })),
      });
      const partition0 = offsets.find((o) => o.partition === 0)!;
      const lagOfPartition0 = Number(partition0.high) - Number(partition0.low);
      expect(lagOfPartition0).toBeGreaterThan(0);
      const result = await cli('topics', '--json');
      expect(result.code, result.stderr).toBe(0);
      const report = JSON.parse(result.stdout) as {
        topics: { topic: string; partitions: number; offsets: number }[];
        groups: { group: string; topic: string; lag: number; committedPartitions: number }[];
      };
      expect(report.topics.find((t) => t.topic === topics.trajectories)).toMatchObject({
        partitions: 6,
        offsets: total,
      });
      expect(report.groups).toContainEqual(
        expect.objectContaining({
          group: 'lag-check',
          topic: topics.trajectories,
          lag: lagOfPartition0,
          committedPartitions: 6,
        }),
      );
      const table = await cli('topics');
      expect(table.stdout).toMatch(/spa\.trajectories\s+trajectories\s+6\s+\d+/);
      expect(table.stdout).toMatch(
        new RegExp(`lag-check\\s+Empty\\s+0\\s+spa\\.trajectories\\s+6/6\\s+${lagOfPartition0}`),
      );
    });
  });
});
