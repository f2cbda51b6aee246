/**
 * `spa run --generators 2` on a real broker at a tiny size: the SFT data stage and self-play
 * during PPO each run as two `spa generate --shard i/2` processes, and the run's topics hold each
 * of their trajectories exactly once.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningBroker } from '../../infra/kafka/broker.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import { startTestBroker, stopTestBroker, testConnection } from '../kafka/harness.js';
import { readAllRecords } from '../kafka/read-records.js';
import { runSpa } from './spa-process.js';

const ports = { port: 19354, controllerPort: 19355 };
let broker: RunningBroker;
let runsDir: string;

beforeAll(async () => {
  broker = await startTestBroker('run-generators', ports);
  runsDir = await mkdtemp(join(tmpdir(), 'spa-run-generators-'));
});

afterAll(async () => {
  await stopTestBroker('run-generators', ports);
  if (runsDir) await rm(runsDir, { recursive: true, force: true });
});

const spa = (args: readonly string[]) => runSpa(args, broker.brokers);

/** The ids `groups` × `groupSize` per batch of run `runId` are played under. */
function ids(runId: string, batches: number, groups: number, groupSize: number): string[] {
  const all: string[] = [];
  for (let b = 0; b < batches; b++)
    for (let g = 0; g < groups; g++)
      for (let m = 0; m < groupSize; m++) all.push(`${runId}/train/b${b}/g${g}/m${m}`);
  return all.sort();
}

interface Summary {
  dataStages: { trajectories: number; rowsAccepted: number }[];
  selfPlay: { trajectories: number; rollouts: number };
  generatorVersions: Record<string, number>;
}

describe('spa run --generators 2', () => {
  it('plays the SFT data and the PPO self-play in two spa generate --shard processes, each trajectory once', async () => {
    const file = join(runsDir, 'small.yaml');
    await writeFile(
      file,
      ['generator: oracle', 'sft-groups: 8', 'sft-group-size: 1', 'sft-batches: 1', 'sft-epochs: 1']
        .concat([
          'ppo-steps: 2',
          'ppo-groups-per-step: 2',
          'ppo-group-size: 2',
          'eval-puzzles: 1',
          'eval-k: 1',
        ])
        .join('\n'),
    );
    const runId = 'gens';
    const args = [
      'run',
      '--config-file',
      file,
      '--generators',
      '2',
      '--runs-dir',
      runsDir,
      '--run-id',
      runId,
    ];
    const result = await spa(args);
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    expect(result.stderr).toContain('[sft data (oracle)] 2 generator processes (spa generate --shard)');
    expect(result.stderr).toContain('[spa run] self-play: 2 generator processes (spa generate --shard)');
    for (const shard of ['0/2', '1/2']) expect(result.stderr).toContain(`[generate shard ${shard}]`);

    const summary = JSON.parse(await readFile(join(runsDir, runId, 'summary.json'), 'utf8')) as Summary;
    expect(summary.dataStages[0]!.trajectories).toBe(8);
    expect(summary.selfPlay.rollouts).toBe(8);
    // Read back from the rollouts topic: each of the 2 PPO batches once under each version its
    // groups played (a shard a batch ahead of the other can play a newer one).
    const batches = Object.values(summary.generatorVersions).reduce((a, b) => a + b, 0);
    expect(batches).toBeGreaterThanOrEqual(2);
    expect(batches).toBeLessThanOrEqual(4);

    const connection = testConnection(broker.brokers);
    const kafka = { transport: kafkaTransport(connection), config: connection };
    try {
      const trajectories = await readAllRecords(kafka, `spa.${runId}.trajectories`, 'Trajectory', 16);
      expect(trajectories.map((t) => t.trajectory_id).sort()).toEqual(
        [...ids(`${runId}-sft`, 1, 8, 1), ...ids(`${runId}-rl`, 2, 2, 2)].sort(),
      );
      const rows = await readAllRecords(
        kafka,
        `spa.${runId}.sft`,
        'SftRow',
        summary.dataStages[0]!.rowsAccepted,
      );
      expect(rows).toHaveLength(summary.dataStages[0]!.rowsAccepted);
      const keys = rows.map((r) => `${r.trajectory_id}#${r.turn}`);
      expect(new Set(keys).size).toBe(keys.length);
      const rollouts = await readAllRecords(kafka, `spa.${runId}.rollouts`, 'Rollout', 8);
      expect(rollouts.map((r) => r.trajectory_id).sort()).toEqual(ids(`${runId}-rl`, 2, 2, 2));
    } finally {
      await kafka.transport.close();
    }
  }, 1_200_000);
});
