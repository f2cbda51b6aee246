/**
 * `spa replay` against a real broker: one generation run on spa.trajectories replayed into
 * ablation topics. With `self-belief` the rows keep the model's own observation/prediction
 * text; with `gt` they carry the true states (docs/spa-data.md#replacement).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envFactory } from '../../envs/registry.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import type { SftRow, Trajectory } from '../../schemas/index.js';
import type { SpaRecordName } from '../../schemas/index.js';
import { spaTopicNames, spaTopics } from '../../schemas/topics.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { generatorPipeline } from '../../streams/generator-pipeline.js';
import type { KafkaConnection } from '../../streams/kafka/consume-spa.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import { publishOutbound } from '../../streams/kafka/publish-outbound.js';
import { parseFromOffset, parseFromTime } from '../../streams/kafka/replay-start.js';
import { replayTrajectories } from '../../streams/kafka/replay.js';
import { builtinPolicy } from '../../policies/builtin.js';
import { runSpa } from '../cli/spa-process.js';
import { startTestBroker, stopTestBroker, testConnection } from './harness.js';
import { readAllRecords } from './read-records.js';

const ports = { port: 19430, controllerPort: 19431 };
let brokers: readonly string[];

const spansOf = (text: string, tag: string): string[] =>
  [...text.matchAll(new RegExp(`<${tag}>(.*?)</${tag}>`, 'gs'))].map((m) => m[1] ?? '');

beforeAll(async () => {
  brokers = (await startTestBroker('replay', ports)).brokers;
});

afterAll(async () => {
  await stopTestBroker('replay', ports);
});

describe('replay start positions', () => {
  it('parses N for every partition and p:N for named partitions, naming bad input', () => {
    expect(parseFromOffset('12')).toEqual({ kind: 'offsets', every: 12n });
    expect(parseFromOffset('0:5,3:7')).toEqual({
      kind: 'offsets',
      partitions: new Map([
        [0, 5n],
        [3, 7n],
      ]),
    });
    expect(() => parseFromOffset('x')).toThrow('"x" is not an offset');
    expect(() => parseFromOffset('1:2,1:3')).toThrow('partition 1 twice');
    expect(parseFromTime('2025-06-01T12:00:00Z')).toEqual({
      kind: 'timestamp',
      timestamp: Date.UTC(2025, 5, 1, 12),
    });
    expect(() => parseFromTime('yesterday')).toThrow('not an ISO 8601 time');
  });
});

describe('spa replay', () => {
  const prefix = 'spa.';
  const topics = spaTopicNames({ prefix });
  const ablation = (name: string): string => `ablation.${name}`;
  let kafka: KafkaConnection;
  let generated: { trajectories: number; sft: number };

  const readAll = <N extends SpaRecordName>(topic: string, name: N, count = 0) =>
    readAllRecords(kafka, topic, name, count);

  beforeAll(async () => {
    const config = testConnection(brokers);
    await applyTopicsTo(brokers, spaTopics({ prefix }));
    kafka = { transport: kafkaTransport(config), config };
    // The random policy writes empty observation/prediction spans: its "self-belief" is visibly
    // different from the true states, so the two ablations cannot be confused.
    const episodes = episodeConfig({
      env: 'sokoban',
      groups: 6,
      groupSize: 4,
      batches: 1,
      runId: 'replay',
      mode: 'wm',
    });
    const outputs = generatorPipeline(
      episodes,
      envFactory({ name: 'sokoban', puzzles: 'generated' }),
      builtinPolicy('random', { mode: 'wm', seed: 7 }),
      { target: 'sft' },
    );
    const sink = await kafka.transport.sink({ transactionalId: 'replay-test-generator' });
    generated = await publishOutbound(outputs, sink, { topics, transactionRecords: 16 });
    await sink.close();
  });

  afterAll(async () => {
    await kafka?.transport.close();
  });

  it('self-belief keeps the model own text; gt puts the true states in every row', async () => {
    const trajectories = await readAll(topics.trajectories, 'Trajectory', 24);
    expect(trajectories).toHaveLength(24);
    const byId = new Map<string, Trajectory>(trajectories.map((t) => [t.trajectory_id, t]));
    const run = (annotation: 'gt' | 'self-belief', toTopic: string) =>
      replayTrajectories(kafka, {
        fromTopic: topics.trajectories,
        toTopic,
        dlqTopic: topics.dlq,
        start: { kind: 'earliest' },
        annotation,
        log: () => {},
      });
    const selfBelief = await run('self-belief', ablation('self-belief'));
    const gt = await run('gt', ablation('gt'));
    expect(selfBelief).toMatchObject({ read: 24, rows: generated.sft, createdTarget: true });
    expect(gt).toMatchObject({ read: 24, rows: generated.sft, createdTarget: true });

    const ownText = (row: SftRow): string => {
      const trajectory = byId.get(row.trajectory_id)!;
      return trajectory.messages.filter((m) => m.role === 'assistant')[row.turn]!.content;
    };
    const selfRows = await readAll(ablation('self-belief'), 'SftRow', generated.sft);
    expect(selfRows).toHaveLength(generated.sft);
    for (const row of selfRows) {
      expect(row.annotation).toBe('self-belief');
      expect(row.response).toBe(ownText(row)); // the model's text, untouched
      expect(spansOf(row.response, 'observation')).toEqual(['']);
    }
    const gtRows = await readAll(ablation('gt'), 'SftRow', generated.sft);
    expect(gtRows).toHaveLength(generated.sft);
    for (const row of gtRows) {
      const { states } = byId.get(row.trajectory_id)!;
      expect(row.annotation).toBe('gt');
      expect(spansOf(row.response, 'observation')).toEqual([states[row.turn]]);
      expect(spansOf(row.response, 'prediction')).toEqual([states[row.turn + 1]]);
    }
    // The generator's own gt rows on spa.sft are what a gt replay reproduces.
    const original = await readAll(topics.sft, 'SftRow', generated.sft);
    const key = (r: SftRow) => `${r.trajectory_id}#${r.turn}`;
    const sorted = (rows: SftRow[]) => [...rows].sort((a, b) => key(a).localeCompare(key(b)));
    expect(sorted(gtRows).map((r) => r.response)).toEqual(sorted(original).map((r) => r.response));
  });

  it('runs as `spa replay`: creates the target, stops at the end offsets, summary on stdout', async () => {
    const args = ['replay', '--from-topic', topics.trajectories, '--dlq-topic', topics.dlq];
    args.push('--to-topic', ablation('cli'), '--annotate', 'random-coords');
    const { code, stdout, stderr } = await runSpa(args, brokers);
    expect(code, stderr).toBe(0);
    expect(stderr).toContain(`created topic ${ablation('cli')} with spa.sft's config`);
    const summary = JSON.parse(stdout.trim()) as { read: number; rows: number; annotation: string };
    expect(summary).toMatchObject({ read: 24, rows: generated.sft, annotation: 'random-coords' });
    const rows = await readAll(ablation('cli'), 'SftRow', generated.sft);
    expect(rows.every((r) => r.annotation === 'random-coords')).toBe(true);
  });

  it('starts at a time after the last record: reads nothing and stops', async () => {
    const summary = await replayTrajectories(kafka, {
      fromTopic: topics.trajectories,
      toTopic: ablation('late'),
      dlqTopic: topics.dlq,
      start: parseFromTime(new Date(Date.now() + 60_000).toISOString()),
      annotation: 'gt',
      log: () => {},
    });
    expect(summary).toMatchObject({ read: 0, rows: 0, transactions: 0 });
    expect(summary.ranges.every((r) => r.start === r.end)).toBe(true);
  });
});
