/**
 * Issue 36 item 8: a finished run id reprints its summary (exit 0); a resumed run's `seconds`
 * count every attempt; `spa run --help` states the real default model; the summary's labels do
 * not collide (the random floor is no policy version).
 */
import { mkdirSync, mkdtempSync as makeTemp, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { summaryLines } from '../../cli/commands/run.js';
import { loopConfig } from '../../loop/configs.js';
import type { LoopEvaluation } from '../../loop/evaluate.js';
import type { LoopSummary } from '../../loop/spa-loop.js';
import { AttemptClock, readStageSeconds } from '../../loop/stage-seconds.js';
import { passReport } from '../../streams/eval/pass-at-k.js';
import { runSpa } from '../cli/spa-process.js';

/** An evaluation of `policy` v`version` at `stage` whose puzzle i is solved in `solved[i]` of 4. */
const evaluation = (policy: string, version: number, stage: string, solved: number[]): LoopEvaluation => ({
  ...passReport(
    solved.map((n, i) => ({
      groupId: `g${i}`,
      puzzle: `${123 + i}`,
      successes: [0, 1, 2, 3].map((j) => j < n),
    })),
  ),
  env: 'sokoban',
  policy,
  policyVersion: version,
  command: `npx spa eval --policy ${policy} --seed 11`,
  stage,
});

/** A finished default run's summary.json, as runSpaLoop writes it. */
const summaryOf = (runDir: string): LoopSummary => ({
  runId: 'done',
  runDir,
  config: loopConfig('_2_sokoban'),
  topics: {},
  dataStages: [],
  warmup: null,
  sft: { step: 10 },
  selfPlay: { trajectories: 0, rollouts: 48 },
  generatorVersions: { '1': 1, '2': 2 },
  evaluations: [
    // the random policy reports version 0, as the self-play policy v0 does
    evaluation('random', 0, 'random floor', [1, 1, 0, 2]),
    evaluation('onnx:v000000', 0, 'self-play v0', [2, 3, 2, 2]),
    evaluation('onnx:v000001', 1, 'before PPO', [2, 2, 2, 2]),
    evaluation('onnx:v000004', 4, 'after PPO', [3, 2, 2, 2]),
  ],
  seconds: { kafka: 5, 'warm-up data': 5, sft: 97, evaluate: 52 },
  attempts: 2,
});

afterEach(() => {
  vi.useRealTimers();
});

/** Temporary folders of this file, removed at the end. */
const temps: string[] = [];
const mkdtempSync = (prefix: string) => {
  temps.push(makeTemp(prefix));
  return temps.at(-1)!;
};
afterAll(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

describe('a finished run id', () => {
  it('reprints its summary and exits 0, without a broker', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'spa-run-finished-'));
    const runDir = join(runsDir, 'done');
    mkdirSync(runDir);
    writeFileSync(join(runDir, 'summary.json'), JSON.stringify(summaryOf(runDir)));
    // a dead broker: the summary must come from the run folder alone
    const result = await runSpa(['run', '--runs-dir', runsDir, '--run-id', 'done'], ['127.0.0.1:9']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('run done finished earlier; its summary follows');
    expect(result.stdout).toContain('  random floor ');
    expect(result.stdout).toContain('159 in all over 2 attempts');
    expect(result.stdout.trim().split('\n').at(-1)).toBe(runDir);
  });
});

describe('the summary table', () => {
  it('labels each row once: the random floor carries no version', () => {
    const lines = summaryLines(summaryOf('/runs/done'));
    const header = lines.findIndex((l) => l.startsWith('  policy '));
    const labels = lines.slice(header + 1, header + 5).map((l) => l.slice(2, 25).trim());
    expect(labels).toEqual(['random floor', 'v0 self-play', 'v1 before PPO', 'v4 after PPO']);
    expect(lines.join('\n')).not.toMatch(/random v0/);
  });
});

describe("a resumed run's seconds", () => {
  it('add up every attempt: the stages it kept, the one cut off and the ones it ran', () => {
    vi.useFakeTimers();
    const runDir = mkdtempSync(join(tmpdir(), 'spa-run-seconds-'));
    mkdirSync(join(runDir, 'stages'));
    const first = new AttemptClock(runDir);
    first.start('kafka');
    vi.advanceTimersByTime(5_000);
    first.stop('kafka');
    first.start('sft data');
    vi.advanceTimersByTime(20_000);
    first.stop('sft data');
    first.start('sft');
    vi.advanceTimersByTime(30_000);
    first.save(); // Ctrl-C: the exit handler saves the stage under way
    expect(readStageSeconds(runDir)).toEqual({ attempts: 1, seconds: { kafka: 5, 'sft data': 20, sft: 30 } });

    const second = new AttemptClock(runDir); // `sft data` is kept, `sft` runs again
    for (const [stage, ms] of [
      ['kafka', 3_000],
      ['sft', 70_000],
      ['evaluate', 50_000],
    ] as const) {
      second.start(stage);
      vi.advanceTimersByTime(ms);
      second.stop(stage);
    }
    expect(second.total()).toEqual({
      attempts: 2,
      seconds: { kafka: 8, 'sft data': 20, sft: 100, evaluate: 50 },
    });
    expect(readStageSeconds(runDir)).toEqual(second.total());
  });

  it('are not written before a stage has made the run folder', () => {
    const runDir = join(mkdtempSync(join(tmpdir(), 'spa-run-seconds-')), 'new');
    new AttemptClock(runDir).save();
    expect(readStageSeconds(runDir)).toEqual({ attempts: 0, seconds: {} });
  });
});

describe('spa run --help', () => {
  it("states the default model of the default config, and the tiny models' names", async () => {
    const help = (await runSpa(['run', '--help'], [])).stdout.replace(/\s+/g, ' ');
    const model = help.match(/--model <\S+> (.*?) --/)?.[1];
    expect(model).toContain(`default ${loopConfig('_2_sokoban').model})`);
    expect(model).toContain('tiny, tiny-cells, tiny-local');
  });
});
