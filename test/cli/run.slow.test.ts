/**
 * The README's first command end to end: `spa run` (= `npm start`) on a real broker — format
 * warm-up → self-play SFT data from v0 → SFT of the tiny model → ONNX export → self-play with `--policy latest` while PPO publishes
 * new versions → Pass@1 / Pass@k. Only the evaluation is cut (2 puzzles), so the loop under test
 * is the default one. After that full-size run (~9 min), small-size whole loops: resume, export
 * cadence, `spa eval --policy latest --run`.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningBroker } from '../../infra/kafka/broker.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import { startTestBroker, stopTestBroker, testConnection } from '../kafka/harness.js';
import { readAllRecords } from '../kafka/read-records.js';
import { runSpa, spawnSpa } from './spa-process.js';

const ports = { port: 19600, controllerPort: 19601 };
let broker: RunningBroker;
let runsDir: string;

beforeAll(async () => {
  broker = await startTestBroker('spa-run', ports);
  runsDir = await mkdtemp(join(tmpdir(), 'spa-run-'));
});

afterAll(async () => {
  await stopTestBroker('spa-run', ports);
  if (runsDir) await rm(runsDir, { recursive: true, force: true });
});

/** Runs `spa <args>` against the test broker. */
const spa = (args: readonly string[]) => runSpa(args, broker.brokers);

interface Summary {
  runDir: string;
  dataStages: {
    stage: string;
    policy: { name: string; version: number | null };
    trajectories: number;
    rowsAccepted: number;
    rejectsByReason: Record<string, number>;
  }[];
  warmup: { action_board_mi: number; observation_copy_exact_match: number };
  sft: { step: number; val_loss: number; exact_match_rows: number };
  selfPlay: { rollouts: number };
  generatorVersions: Record<string, number>;
  evaluations: {
    policy: string;
    policyVersion: number;
    pass1: number;
    passK: number;
    episodes: number;
    command: string;
    stage: string;
  }[];
}

/**
 * Starts the CLI and, once its stderr matches `pattern`, sends `signal`; resolves with
 * its stderr and the seconds until the match when it has exited; rejects after `ms`.
 */
function stderrOf(
  args: readonly string[],
  pattern: RegExp,
  ms: number,
  signal: NodeJS.Signals = 'SIGKILL',
): Promise<{ text: string; seconds: number }> {
  const started = Date.now();
  const { child } = spawnSpa(args, broker.brokers);
  let text = '';
  let matched = 0;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no ${pattern} on stderr within ${ms} ms:\n${text}`));
    }, ms);
    child.stderr!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (pattern.test(text) && !matched) {
        matched = (Date.now() - started) / 1000;
        child.kill(signal);
      }
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (matched) resolve({ text, seconds: matched });
      else reject(new Error(`exited with ${code} before ${pattern} appeared on stderr:\n${text}`));
    });
  });
}

describe('spa run (the main job) at the default size', () => {
  it('runs the loop, swaps policy versions and prints Pass@1 / Pass@k', async () => {
    const result = await spa(['run', '--eval-puzzles', '2', '--runs-dir', runsDir, '--run-id', 'ci']);
    expect(result.code, result.stderr.slice(-3000)).toBe(0);

    const lines = result.stdout.trim().split('\n');
    const runDir = lines.at(-1)!;
    expect(runDir).toBe(join(runsDir, 'ci'));
    expect(result.stdout).toMatch(/policy\s+Pass@1\s+Pass@4/);

    const summary = JSON.parse(await readFile(join(runDir, 'summary.json'), 'utf8')) as Summary;
    // SPA's recipe (docs/spa-loop.md): the tiny model's format warm-up on oracle demonstrations,
    // then self-play SFT data from the warmed-up model exported as policy v0.
    // The warm-up demonstrates world-model turns for the prompts of self-play and of PPO and
    // evaluation (docs/spa-loop.md#warm-up).
    expect(summary.dataStages.map((d) => d.stage)).toEqual([
      'warm-up data (oracle, wm)',
      'warm-up data (oracle, base-wm)',
      'self-play sft data',
    ]);
    const [warmup, warmupBase, selfPlay] = summary.dataStages;
    expect(warmup!.policy).toEqual({ name: 'oracle', version: null });
    expect([warmup!.trajectories, warmupBase!.trajectories]).toEqual([3072, 3072]);
    // The warmed-up model's first action depends on the board (0 nats: it ignores it; ln 4 at most)
    // and it copies the board into <observation> when generating (docs/spa-sft.md#metrics).
    expect(summary.warmup.action_board_mi).toBeGreaterThan(0.3);
    expect(summary.warmup.observation_copy_exact_match).toBeGreaterThan(0.5);
    expect(result.stdout).toMatch(/warm-up SFT +\d+ steps; first action: \d\.\d\d nats about the board/);
    expect(selfPlay!.policy).toEqual({ name: 'onnx:v000000', version: 0 });
    expect(selfPlay!.trajectories).toBe(256);
    expect(selfPlay!.rowsAccepted).toBeGreaterThanOrEqual(256); // one row per turn, ≥ 1 turn each
    expect(selfPlay!.rejectsByReason).toEqual({}); // SPA does not filter Sokoban rows
    expect(result.stdout).toContain('self-play sft data onnx:v000000 v0: 256 trajectories');
    // The default SFT must actually train: an untrained tiny model sits at ln(vocab) ≈ 6.9.
    expect(summary.sft.val_loss).toBeLessThan(1.5);
    // v0 plays whole world-model turns in its context window (docs/spa-generation.md#window), so
    // most held-out self-play rows carry a <prediction> to score; on whole prompts almost none did.
    expect(summary.sft.exact_match_rows).toBeGreaterThanOrEqual(48);
    expect(result.stdout).toMatch(/next-state exact match \d\.\d{3} ± \d\.\d{3} on \d+ held-out rows/);
    expect(summary.selfPlay.rollouts).toBe(3 * 4 * 4);
    // Live swap: the generator used at least two policy versions while it ran.
    expect(Object.keys(summary.generatorVersions).length).toBeGreaterThanOrEqual(2);
    const final = summary.evaluations.at(-1)!;
    expect(final.policy).toMatch(/^onnx:/);
    expect(final.policyVersion).toBeGreaterThanOrEqual(2);
    expect(final.episodes).toBe(2 * 4);
    // the self-play policy, the policy PPO starts from and the final one, each by its stage
    expect(summary.evaluations.map((e) => e.stage)).toEqual([
      'random floor',
      'self-play v0',
      'before PPO',
      'after PPO',
    ]);
    expect(result.stdout).toMatch(/world-model SFT v0 → v1: Pass@1 [+−]\d+\.\d ± \d+\.\d/);
    for (const e of summary.evaluations) {
      expect(e.passK).toBeGreaterThanOrEqual(e.pass1);
      expect(e.passK).toBeLessThanOrEqual(1);
    }

    // The recorded `spa eval` command reproduces the run's own final evaluation exactly.
    expect(final.command).toMatch(
      /^npx spa eval --policy onnx:\S+ --env sokoban --puzzles 2 --k 4 .*--seed 11 .*--context-window 367$/,
    );
    const again = await spa([...final.command.split(' ').slice(2), '--out', join(runDir, 'again.json')]);
    expect(again.code, again.stderr.slice(-2000)).toBe(0);
    const report = JSON.parse(
      await readFile(join(runDir, 'again.json'), 'utf8'),
    ) as Summary['evaluations'][number];
    expect([report.pass1, report.passK, report.episodes]).toEqual([final.pass1, final.passK, final.episodes]);
    // ~9 min on the idle 2-core box; a box shared with a training job made the loop 3.4× slower.
  }, 2_400_000);
});

/** A small run's sizes for --config-file: oracle SFT data on 8 puzzles, PPO on 2 × 2 episodes a step. */
async function smallConfig(name: string, extra: readonly string[]): Promise<string> {
  const file = join(runsDir, `${name}.yaml`);
  await writeFile(
    file,
    ['generator: oracle', 'sft-groups: 8', 'sft-group-size: 1', 'sft-batches: 1', 'sft-epochs: 1']
      .concat(['ppo-groups-per-step: 2', 'ppo-group-size: 2', 'eval-puzzles: 1', 'eval-k: 1', ...extra])
      .join('\n'),
  );
  return file;
}

// The whole loop at a small size: one broker, a run id (so topics `spa.<run>.*`) per test. Together
// they take the Kafka client through the main job's path: the data stage's transactions,
// PPO's rollouts from `--policy latest`, the generator following the policy topic to new versions,
// the run's evaluation and `spa eval --policy latest --run <id>`.
describe('spa run at a small size', () => {
  it('resumes an interrupted run without generating its SFT data twice; its generator swaps to versions PPO publishes', async () => {
    const runId = 'resume';
    // The main job's schedule (export every step, staleness ≤ 1) on 3 steps: batch 2 needs v2 or newer.
    const file = await smallConfig(runId, ['ppo-steps: 3']);
    const args = ['run', '--config-file', file, '--runs-dir', runsDir, '--run-id', runId];
    // Interrupt once the data stage is done and SFT has started.
    const first = await stderrOf(args, /── sft\n/, 600_000, 'SIGINT');
    expect(first.text).toContain('interrupted; resume with: npx spa run --config-file');
    const second = await spa(args);
    expect(second.code, second.stderr.slice(-3000)).toBe(0);
    expect(second.stderr).toContain('── sft data: done in an earlier attempt, kept');
    const summary = JSON.parse(await readFile(join(runsDir, runId, 'summary.json'), 'utf8')) as Summary;
    const connection = testConnection(broker.brokers);
    const kafka = { transport: kafkaTransport(connection), config: connection };
    try {
      const rows = await readAllRecords(
        kafka,
        `spa.${runId}.sft`,
        'SftRow',
        summary.dataStages[0]!.rowsAccepted,
      );
      expect(rows).toHaveLength(summary.dataStages[0]!.rowsAccepted);
      const keys = rows.map((r) => `${r.trajectory_id}#${r.turn}`);
      expect(new Set(keys).size).toBe(keys.length);
    } finally {
      await kafka.transport.close();
    }
    expect(summary.selfPlay.rollouts).toBe(3 * 2 * 2);
    // Live swap: batch 0 can only start on SFT's v1, batch 2 waits for v2 or newer.
    expect(summary.generatorVersions['1']).toBeGreaterThanOrEqual(1);
    expect(Object.keys(summary.generatorVersions).length).toBeGreaterThanOrEqual(2);
    // SFT's v1, then an export after each step: the run evaluates v4, loaded from the policy topic.
    const final = summary.evaluations.at(-1)!;
    expect([final.policy, final.policyVersion, final.episodes]).toEqual(['onnx:v000004', 4, 1]);
  }, 1_200_000);

  it('finishes with an export cadence longer than the staleness bound (sizes from --config-file)', async () => {
    // Small sizes from a file; the schedule from flags: a batch may wait for a version 3 steps away.
    const runId = 'cadence';
    const file = await smallConfig(runId, []);
    const args = ['--ppo-steps', '6', '--export-every', '3', '--max-staleness', '1'];
    const result = await spa([
      'run',
      '--config-file',
      file,
      ...args,
      '--runs-dir',
      runsDir,
      '--run-id',
      runId,
    ]);
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const runDir = join(runsDir, runId);
    const summary = JSON.parse(await readFile(join(runDir, 'summary.json'), 'utf8')) as Summary & {
      config: { ppoSteps: number; exportEvery: number; maxStaleness: number; sftGroups: number };
    };
    expect(summary.config).toMatchObject({ ppoSteps: 6, exportEvery: 3, maxStaleness: 1, sftGroups: 8 });
    expect(summary.selfPlay.rollouts).toBe(6 * 2 * 2);
    // SFT's v1, then exports after steps 3 and 6: the final policy is v3.
    expect(summary.evaluations.at(-1)!.policyVersion).toBe(3);
    const metrics = (await readFile(join(runDir, 'ppo', 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { over_max_staleness: number; trainer_version: number });
    expect(metrics.map((m) => m.trainer_version)).toEqual([1, 1, 1, 2, 2, 2]);
    expect(metrics.map((m) => m.over_max_staleness)).toEqual([0, 0, 0, 0, 0, 0]);
  }, 1_200_000);

  it("spa eval --policy latest --run <id> follows that run's policy topic; an empty topic is named within seconds", async () => {
    // Follows the policies the cadence run above published; without them it would wait its whole timeout.
    const runId = 'cadence';
    expect(existsSync(join(runsDir, runId, 'summary.json')), 'the cadence test above did not finish').toBe(
      true,
    );
    const latest = await spa([
      'eval',
      '--policy',
      'latest',
      '--run',
      runId,
      '--env',
      'sokoban',
      '--puzzles',
      '1',
      '--k',
      '1',
    ]);
    expect(latest.code, latest.stderr.slice(-2000)).toBe(0);
    expect(latest.stdout).toMatch(/policy onnx:v000003 v3 /);
    const nobody = 'nobody';
    const waiting = await stderrOf(
      ['eval', '--policy', 'latest', '--run', nobody, '--env', 'sokoban', '--puzzles', '1', '--k', '1'],
      new RegExp(`waiting for a policy on spa\\.${nobody}\\.policy`),
      30_000,
    );
    expect(waiting.seconds).toBeLessThan(20);

    // A new run folder whose run id's topics hold an earlier run's records is refused at once:
    // it would train on that run's rollouts and follow its policies.
    const reused = await spa(['run', '--runs-dir', join(runsDir, 'elsewhere'), '--run-id', runId]);
    expect(reused.code).not.toBe(0);
    expect(reused.stderr).toMatch(
      new RegExp(
        `run id "${runId}" is new in .*elsewhere.*already hold records .*spa\\.${runId}\\.rollouts \\(\\d+ offsets\\)`,
      ),
    );
  }, 120_000);
});
