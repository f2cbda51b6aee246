/**
 * SPA check (docs/spa-check.md): SPA's ablation, from a start that stands in for the paper's base
 * model. Does the same PPO budget learn more after world-model SFT on the model's own
 * ground-truth-annotated self-play (the SPA arm) than straight away (the RL-only arm)?
 *
 *   npm run spa-check [-- --starts 2 --steps 40 --out runs/spa-check]
 *
 * Each start is a format warm-up with its own seed: turns that follow the world-model format in both
 * prompt modes with empty state tags and uniformly random actions, so it knows neither the game's
 * policy nor its dynamics (docs/spa-check.md#start). From each start four arms run
 * (scripts/check/arms.ts): wm (SPA), ppo (RL only) and each one's learning-rate-0 control, with the
 * same PPO steps, episodes and settings. Then one probe per start scores the start, the SPA arm's
 * SFT checkpoint and both arms' ends on the same held-out self-play turns (next-state exact match,
 * observation copy, the board dependence of the action). Prints the table and writes it with every
 * number to <out>/spa-check.{md,json}.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LoopSummary } from '../loop/spa-loop.js';
import { trainerPython } from '../loop/trainer-process.js';
import type { EvaluationResult } from '../streams/eval/evaluate.js';
import { armPlans, parseArms, runDirOf, runIdOf, warmupDirOf, type Arm, type Start } from './check/arms.js';
import { checkProgram, RUN_DEFAULTS, type CheckOptions } from './check/options.js';
import { armsTable, evaluationAt, pct, pooledDifference } from './check/table.js';
import { runArms } from './run-arms.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

interface SpaCheckOptions extends CheckOptions {
  starts: number;
}

/** The check's recipe (docs/spa-check.md#arms): what differs from ppo-check's defaults. */
const SPA_CHECK_DEFAULTS = {
  arms: 'wm,ppo,wm-control,control',
  out: 'runs/spa-check',
  warmupPuzzles: 512,
  warmupExplore: '1',
  warmupExploreModes: 'wm,base-wm',
  warmupStates: 'empty',
  sftLr: '3e-3',
  sftEpochs: 4,
  sftPuzzles: 512,
  sftPrompts: 'wm,base',
  sftBatchSize: 8,
  sftDecisionWeight: '1',
  steps: 20,
  evalEvery: 10,
  evalK: 4,
  actorLr: '5e-4',
  klCoef: '0.05',
  lossAgg: 'seq-mean-token-mean',
  parallel: 4,
} as const;

/** What a model knows of the game on the held-out self-play turns (spa_trainer.experiments.world_model_probe). */
interface ProbeScores {
  readonly next_state_exact_match: number | null;
  readonly observation_copy_exact_match: number | null;
  readonly action_board_mi: number | null;
}

/** The models a start's probe scores, by their name in the table. */
const PROBED = ['start', 'after world-model SFT', 'RL-only end', 'SPA end'] as const;

function probeStart(o: CheckOptions, start: Start, arms: readonly Arm[]): Record<string, ProbeScores> {
  const wm = runDirOf(o, start, 'wm');
  const models = [
    warmupDirOf(o, start, arms),
    join(wm, 'sft'),
    join(runDirOf(o, start, 'ppo'), 'ppo'),
    join(wm, 'ppo'),
  ];
  const args = [
    ...['-m', 'spa_trainer.experiments.world_model_probe'],
    ...['--input', `kafka:spa.${runIdOf(o, start, 'wm')}.sft`],
    ...['--window', String(RUN_DEFAULTS.sftMaxLength)],
    ...models.flatMap((m) => ['--model', m]),
  ];
  process.stderr.write(`[${start.name}:probe] ${args.join(' ')}\n`);
  const probe = spawnSync(trainerPython(), args, {
    cwd: join(root, 'trainer'),
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, CUDA_VISIBLE_DEVICES: '' },
  });
  if (probe.status !== 0) throw new Error(`world_model_probe of ${start.name} exited with ${probe.status}`);
  const scores = (JSON.parse(probe.stdout) as { models: Record<string, ProbeScores> }).models;
  return Object.fromEntries(PROBED.map((name, i) => [name, scores[models[i]!]!]));
}

/** The share of the start's PPO turns that followed the format (its first step's rollouts). */
function startFormatValid(o: CheckOptions, start: Start): number | null {
  const first = readFileSync(join(runDirOf(o, start, 'ppo'), 'ppo', 'metrics.jsonl'), 'utf8').split('\n')[0];
  const ppo = first ? (JSON.parse(first) as { ppo?: Record<string, number> }).ppo : undefined;
  return ppo?.['score/format_valid_turns'] ?? null;
}

const mean = (xs: readonly (number | null)[]) => {
  const known = xs.filter((x): x is number => x !== null);
  return known.length > 0 ? known.reduce((a, x) => a + x, 0) / known.length : null;
};
const fixed = (x: number | null, digits: number) => (x === null ? '–' : x.toFixed(digits));

/** The world-model probe's table: each probed model's scores, the mean over starts and each start's. */
function probeTable(probes: readonly Record<string, ProbeScores>[]): string {
  const lines = [
    '| model | next-state exact match | observation copy | action–board information (nats) |',
    '| --- | --- | --- | --- |',
  ];
  for (const name of PROBED) {
    const cell = (key: keyof ProbeScores, digits: number) =>
      `${fixed(mean(probes.map((p) => p[name]![key])), digits)} (${probes.map((p) => fixed(p[name]![key], digits)).join(', ')})`;
    lines.push(
      `| ${name} | ${cell('next_state_exact_match', 3)} | ${cell('observation_copy_exact_match', 3)} | ${cell('action_board_mi', 3)} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const program = checkProgram('spa-check', SPA_CHECK_DEFAULTS).option(
    '--starts <n>',
    'independent starts (warm-up seeds 1..n)',
    Number,
    2,
  );
  program.parse(process.argv.slice(2), { from: 'user' });
  const o = program.opts<SpaCheckOptions>();
  const arms = parseArms(o.arms);
  for (const needed of ['wm', 'ppo'] as const)
    if (!arms.includes(needed))
      throw new Error(`--arms: spa-check compares wm and ppo; ${needed} is missing`);
  if (!(Number.isInteger(o.starts) && o.starts >= 1 && o.starts <= 16))
    throw new Error(`--starts ${o.starts}: expected an integer in 1..16`);
  if (o.warmFrom) throw new Error('--warm-from: spa-check makes its own starts (one warm-up per seed)');
  const starts: Start[] = Array.from({ length: o.starts }, (_, i) => ({
    name: `s${i + 1}`,
    warmupSeed: i + 1,
  }));
  const started = Date.now();
  const env = { ...process.env };
  if (o.parallel > 1) env.OMP_NUM_THREADS ??= '1';
  // Arm by arm across the starts: the long SPA arms first, their controls last.
  const perStart = starts.map((start) => armPlans(o, arms, start));
  const plans = arms.flatMap((_, i) => perStart.map((p) => p[i]!));
  const results = (await runArms(plans, { parallel: o.parallel, env })) as Map<string, LoopSummary>;
  const summaries = (arm: Arm) => starts.map((s) => results.get(`${s.name}:${arm}`)!);
  const byArm = new Map(arms.map((arm) => [arm, summaries(arm)] as const));
  const end = (arm: Arm) => summaries(arm).map((s) => evaluationAt(s, o.steps));
  const spaVsRl = pooledDifference(end('ppo').map((rl, i) => [rl, end('wm')[i]!] as const));
  const probes = starts.map((s) => probeStart(o, s, arms));
  const startEval = summaries('ppo').map((s) => evaluationAt(s, 0));
  const formatValid = starts.map((s) => startFormatValid(o, s));
  const minutes = (Date.now() - started) / 60_000;
  const text = [
    `SPA check: ${o.starts} starts (warm-up seeds 1..${o.starts}), ${o.steps} PPO steps of ${o.groups} × ${o.groupSize} episodes an arm; Pass@1 % on ${o.evalPuzzles} validation puzzles × ${o.evalK}, pooled over the starts, differences paired by puzzle.`,
    '',
    armsTable(o, byArm),
    '',
    `**SPA − RL-only (paired, pooled): ${spaVsRl}** at step ${o.steps}.`,
    '',
    `The start (each start's): Pass@1 ${startEval.map((e: EvaluationResult) => pct(e.pass1, e.pass1StdErr)).join(', ')}; format-valid turns ${formatValid.map((f) => fixed(f, 3)).join(', ')}.`,
    '',
    probeTable(probes),
    '',
    `Wall time of the check: ${minutes.toFixed(1)} min.`,
  ].join('\n');
  console.log(text);
  mkdirSync(o.out, { recursive: true });
  writeFileSync(join(o.out, 'spa-check.md'), `${text}\n`);
  writeFileSync(
    join(o.out, 'spa-check.json'),
    JSON.stringify(
      { options: o, minutes, spaVsRl, formatValid, probes, arms: Object.fromEntries(results) },
      null,
      2,
    ) + '\n',
  );
}

await main();
