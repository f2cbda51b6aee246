/**
 * Dead letters against a real broker: corrupt bytes and a frame with an unknown schema
 * fingerprint on a topic go to spa.dlq with their reasons and original bytes, and the
 * consumer (replay) carries on with the valid record behind them (design: Contracts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filter, firstValueFrom, map } from 'rxjs';
import { envFactory } from '../../envs/registry.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import { frameSingleObject, type Trajectory } from '../../schemas/index.js';
import type { SpaRecordName } from '../../schemas/index.js';
import { spaTopicNames, spaTopics } from '../../schemas/topics.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { generatorPipeline } from '../../streams/generator-pipeline.js';
import type { KafkaConnection } from '../../streams/kafka/consume-spa.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import { replayTrajectories } from '../../streams/kafka/replay.js';
import { toKafkaRecord } from '../../streams/kafka/spa-records.js';
import { builtinPolicy } from '../../policies/builtin.js';
import { startTestBroker, stopTestBroker, testConnection } from './harness.js';
import { readAllRecords } from './read-records.js';

const ports = { port: 19420, controllerPort: 19421 };
let brokers: readonly string[];

/** One real trajectory from the generator (oracle policy: it passes the malformed filter). */
async function oneTrajectory(): Promise<Trajectory> {
  const config = episodeConfig({
    env: 'sokoban',
    groups: 1,
    groupSize: 1,
    batches: 1,
    runId: 'dlq',
    mode: 'wm',
  });
  const outputs = generatorPipeline(
    config,
    envFactory({ name: 'sokoban', puzzles: 'generated' }),
    builtinPolicy('oracle', { mode: 'wm' }),
    { target: 'sft' },
  );
  return firstValueFrom(
    outputs.pipe(
      filter((o) => o.topic === 'trajectories'),
      map((o) => o.record as Trajectory),
    ),
  );
}

beforeAll(async () => {
  brokers = (await startTestBroker('dlq', ports)).brokers;
});

afterAll(async () => {
  await stopTestBroker('dlq', ports);
});

describe('undecodable records on a topic', () => {
  const topics = spaTopicNames({ prefix: 'spa.' });
  const source = 'dlq.source';
  const rowsTopic = 'dlq.rows';
  let kafka: KafkaConnection;

  const readAll = <N extends SpaRecordName>(topic: string, name: N, count = 0) =>
    readAllRecords(kafka, topic, name, count);

  beforeAll(async () => {
    const config = testConnection(brokers);
    await applyTopicsTo(brokers, [
      ...spaTopics({ prefix: 'spa.' }),
      { role: 'trajectories', name: source, partitions: 1, replicationFactor: 1, configs: {} },
    ]);
    kafka = { transport: kafkaTransport(config), config };
  });

  afterAll(async () => {
    await kafka?.transport.close();
  });

  it('go to spa.dlq as bad-magic / unknown-fingerprint with their bytes; the valid record behind them goes through', async () => {
    const trajectory = await oneTrajectory();
    const corrupt = Buffer.from('{"not":"avro"}');
    const unknown = frameSingleObject(Buffer.from('0123456789abcdef', 'hex'), Buffer.from([2, 4, 6]));
    const sink = await kafka.transport.sink();
    // One partition, in this order: the two bad records sit in front of the good one.
    await sink.send([
      { topic: source, key: Buffer.from('corrupt'), value: corrupt },
      { topic: source, key: Buffer.from('unknown'), value: unknown },
      toKafkaRecord({ topic: 'trajectories', key: trajectory.trajectory_id, record: trajectory }, source),
    ]);
    await sink.close();

    const summary = await replayTrajectories(kafka, {
      fromTopic: source,
      toTopic: rowsTopic,
      dlqTopic: topics.dlq,
      start: { kind: 'earliest' },
      annotation: 'gt',
      log: () => {},
    });
    expect(summary.read).toBe(3);
    expect(summary.rejected).toEqual({ 'bad-magic': 1, 'unknown-fingerprint': 1 });

    const dead = await readAll(topics.dlq, 'Rejected', 2);
    const byReason = new Map(dead.map((r) => [r.reason, r]));
    expect([...byReason.keys()].sort()).toEqual(['bad-magic', 'unknown-fingerprint']);
    expect(byReason.get('bad-magic')).toMatchObject({
      key: 'corrupt',
      source: `${source}[0]@0`,
      payload: corrupt,
    });
    expect(byReason.get('unknown-fingerprint')).toMatchObject({
      key: 'unknown',
      source: `${source}[0]@1`,
      payload: unknown,
      payload_fingerprint: Buffer.from('0123456789abcdef', 'hex'),
    });
    expect(byReason.get('unknown-fingerprint')?.detail).toContain('no known schema has fingerprint');

    const rows = await readAll(rowsTopic, 'SftRow', summary.rows);
    expect(rows.length).toBe(trajectory.turns.length);
    expect(rows.every((r) => r.trajectory_id === trajectory.trajectory_id)).toBe(true);
    expect(summary.rows).toBe(rows.length);
  });
});
