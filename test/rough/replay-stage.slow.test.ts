/**
 * `spa replay` of a run's trajectories topic (issue 36, item 3): the topic holds the run's
 * world-model SFT data (mode wm) and its PPO rollouts (mode base). A replay takes the wm ones by
 * default, as the run's SFT data was made, says what it skipped, and takes both with `--mode all`.
 * Spawns the CLI, as a user runs it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envFactory } from '../../envs/registry.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import { spaTopicNames, spaTopics } from '../../schemas/topics.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { generatorPipeline } from '../../streams/generator-pipeline.js';
import type { KafkaConnection } from '../../streams/kafka/consume-spa.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import { publishOutbound } from '../../streams/kafka/publish-outbound.js';
import { builtinPolicy } from '../../policies/builtin.js';
import { runSpa } from '../cli/spa-process.js';
import { startTestBroker, stopTestBroker, testConnection } from '../kafka/harness.js';
import { readAllRecords } from '../kafka/read-records.js';

const ports = { port: 19770, controllerPort: 19771 };
const prefix = 'spa.rough.';
const topics = spaTopicNames({ prefix });
/** `spa run`'s episode ids: `<run>-sft/…` for the SFT data, `<run>-rl/…` for the PPO rollouts. */
const wmRun = 'rough-sft';
const wmTrajectories = 12; // 3 groups × 4
const baseTrajectories = 8; // 2 groups × 4
let brokers: readonly string[];
let kafka: KafkaConnection;
/** SftRows the generator made from the wm trajectories: what the run trained on. */
let wmRows: number;

/** Plays `groups` × 4 random episodes in `mode` onto the shared topics, as `spa run`'s stage does. */
async function play(mode: 'wm' | 'base', runId: string, groups: number) {
  const episodes = episodeConfig({ env: 'sokoban', groups, groupSize: 4, batches: 1, runId, mode });
  const outputs = generatorPipeline(
    episodes,
    envFactory({ name: 'sokoban', puzzles: 'generated' }),
    builtinPolicy('random', { mode, seed: 7 }),
    { target: mode === 'wm' ? 'sft' : 'rollouts' },
  );
  const sink = await kafka.transport.sink({ transactionalId: `${runId}-generator` });
  try {
    return await publishOutbound(outputs, sink, { topics, transactionRecords: 16 });
  } finally {
    await sink.close();
  }
}

beforeAll(async () => {
  brokers = (await startTestBroker('rough-replay', ports)).brokers;
  const config = testConnection(brokers);
  await applyTopicsTo(brokers, spaTopics({ prefix }));
  kafka = { transport: kafkaTransport(config), config };
  const wm = await play('wm', wmRun, 3);
  expect(wm.trajectories).toBe(wmTrajectories);
  wmRows = wm.sft;
  expect(wmRows).toBeGreaterThan(0);
  expect((await play('base', 'rough-rl', 2)).trajectories).toBe(baseTrajectories);
}, 240_000);

afterAll(async () => {
  await kafka?.transport.close();
  await stopTestBroker('rough-replay', ports);
});

const replay = (toTopic: string, ...extra: string[]) =>
  runSpa(
    [
      'replay',
      '--from-topic',
      topics.trajectories,
      '--dlq-topic',
      topics.dlq,
      '--to-topic',
      toTopic,
      ...extra,
    ],
    brokers,
  );

describe('spa replay of a trajectories topic holding SFT data and PPO rollouts', () => {
  it('takes only the wm trajectories by default and says it skipped the base-mode ones', async () => {
    const target = 'ablation.rough.default';
    const result = await replay(target);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout.trim())).toMatchObject({
      mode: 'wm',
      read: wmTrajectories + baseTrajectories,
      replayed: { wm: wmTrajectories },
      skipped: { base: baseTrajectories },
      rows: wmRows,
    });
    expect(result.stderr).toContain(
      `[replay] replayed ${wmTrajectories} trajectories (wm) into ${wmRows} SFT rows; ` +
        `skipped ${baseTrajectories} base-mode trajectories (PPO rollouts; --mode all takes them)`,
    );
    const rows = await readAllRecords(kafka, target, 'SftRow', wmRows);
    expect(rows).toHaveLength(wmRows);
    expect(rows.filter((row) => !row.trajectory_id.startsWith(`${wmRun}/`))).toEqual([]);
  });

  it('--mode all takes both; --mode base the PPO rollouts alone', async () => {
    const base = await replay('ablation.rough.base', '--mode', 'base');
    expect(base.code, base.stderr).toBe(0);
    const baseSummary = JSON.parse(base.stdout.trim()) as { rows: number };
    expect(baseSummary).toMatchObject({
      replayed: { base: baseTrajectories },
      skipped: { wm: wmTrajectories },
    });
    expect(base.stderr).toContain(`skipped ${wmTrajectories} wm-mode trajectories (world-model SFT data;`);

    const all = await replay('ablation.rough.all', '--mode', 'all');
    expect(all.code, all.stderr).toBe(0);
    expect(JSON.parse(all.stdout.trim())).toMatchObject({
      mode: 'all',
      replayed: { wm: wmTrajectories, base: baseTrajectories },
      skipped: {},
      rows: wmRows + baseSummary.rows,
    });
    expect(all.stderr).toContain(
      `[replay] replayed ${wmTrajectories + baseTrajectories} trajectories ` +
        `(all modes: ${wmTrajectories} wm, ${baseTrajectories} base) into ${wmRows + baseSummary.rows} SFT rows\n`,
    );
  });

  it('an unknown --mode is a usage error naming the choices (exit 2)', async () => {
    const result = await replay('ablation.rough.never', '--mode', 'ppo');
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--mode must be one of wm, base, all, got "ppo"');
  });
});
