/**
 * PPO check (docs/ppo-check.md): does PPO in this system raise the policy's success, beyond what
 * evaluation noise does, and does world-model SFT before PPO help (SPA's ablation) at toy scale?
 *
 *   npm run ppo-check [-- --steps 30 --out runs/ppo-check]
 *
 * Every arm is a real `spa run` (generator with `--policy latest` on onnxruntime-node →
 * spa.<run>.rollouts → PPO service → export → live swap), on Sokoban, evaluated at every export
 * (`--eval-curve`) on the paper's validation puzzles:
 * - ppo: a format warm-up on oracle demonstrations in both prompt modes, then PPO (the RL-only
 *   baseline, `--skip-world-model-sft`);
 * - control: the same warmed-up model, steps and data flow with learning rates 0 (the update
 *   cannot help), so evaluation drift is not mistaken for learning;
 * - wm: the same warmed-up model, world-model SFT on its own ground-truth-annotated self-play
 *   data, then PPO (SPA's recipe);
 * - wm-control: the wm arm's world-model SFT checkpoint, the same steps and data flow with learning
 *   rates 0 (the wm arm's control; starts once the wm arm's SFT is done).
 * Up to `--parallel` arms run side by side, each as soon as its start model exists (an arm
 * alternates between generating and training, so one arm keeps about one core busy).
 * Prints the table and writes it with every number to <out>/ppo-check.{md,json}.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { Command } from 'commander';
import { alignedContextWindow, loopConfig } from '../loop/configs.js';
import type { LoopSummary } from '../loop/spa-loop.js';
import type { EvaluationResult } from '../streams/eval/evaluate.js';
import { pairedDifference } from '../streams/eval/pass-at-k.js';
import { runArms, type ArmPlan } from './run-arms.js';

interface CheckOptions {
  steps: number;
  groups: number;
  groupSize: number;
  keepRatio: string;
  exportEvery: number;
  maxStaleness: number;
  evalEvery: number;
  lossAgg: string;
  klCoef: string;
  advEstimator: string;
  maxNewTokens: string;
  evalPuzzles: number;
  evalK: number;
  actorLr: string;
  criticLr: string;
  warmupPuzzles: number;
  warmupEpochs: number;
  warmupExplore: string;
  warmupModes: string;
  model: string;
  arms: string;
  out: string;
  warmFrom?: string;
  wmAnnotation: string;
  parallel: number;
  ppoEpochs: number;
  miniBatch: number;
}

const ARMS = ['ppo', 'control', 'wm', 'wm-control'] as const;

/** spa run's default recipe for a tiny model: every arm starts from its warm-up. */
const DEFAULTS = loopConfig('_2_sokoban');
type Arm = (typeof ARMS)[number];

/** Each learning arm's control: the same start, steps and data flow with learning rates 0. */
const CONTROL_OF: Partial<Record<Arm, Arm>> = { ppo: 'control', wm: 'wm-control' };

function parseOptions(argv: string[]): CheckOptions {
  const program = new Command('ppo-check')
    .option('--steps <n>', 'PPO steps per arm', Number, 30)
    .option('--groups <n>', 'puzzles per PPO step', Number, 16)
    .option('--group-size <n>', 'episodes per puzzle', Number, 8)
    .option('--keep-ratio <x>', "fraction of a step's groups trained on, by score spread (SPA: 0.25)", '1')
    .option('--export-every <n>', 'PPO steps between exports (1: every step, as SPA)', Number, 1)
    .option(
      '--max-staleness <n>',
      'policy versions a trained batch may lag (0: on-policy, as SPA)',
      Number,
      0,
    )
    .option('--eval-every <n>', 'PPO steps between evaluations (a multiple of --export-every)', Number, 10)
    .option('--loss-agg <mode>', 'PPO loss aggregation: token-mean or seq-mean-token-mean', 'token-mean')
    .option(
      '--kl-coef <x>',
      'KL-to-start-model loss coefficient of the learning arms (0: off, as SPA)',
      '0.01',
    )
    .option(
      '--adv-estimator <name>',
      'PPO advantages: gae (a critic, as SPA), grpo or grpo-mean (docs/spa-ppo.md#grpo)',
      'grpo-mean',
    )
    .option(
      '--max-new-tokens <n>',
      "tokens per assistant turn in self-play and evaluation (spa run's: a one-action world-model turn fits)",
      String(DEFAULTS.maxNewTokens),
    )
    .option('--eval-puzzles <n>', 'validation puzzles per evaluation (seeds from 123)', Number, 128)
    .option(
      '--eval-k <n>',
      'episodes per validation puzzle (16: a paired standard error near 1 point here, docs/ppo-check.md)',
      Number,
      16,
    )
    .option('--ppo-epochs <n>', "passes over each step's episodes (SPA: 1)", Number, 1)
    .option('--mini-batch <n>', 'episodes per optimizer step (SPA: 64)', Number, 64)
    .option('--actor-lr <x>', 'PPO actor learning rate of the learning arms', '2e-4')
    .option('--critic-lr <x>', 'PPO critic learning rate of the learning arms', '1e-3')
    .option(
      '--warmup-puzzles <n>',
      "oracle demonstrations of the warm-up, per kind (spa run's default)",
      Number,
      DEFAULTS.warmupTrajectories,
    )
    .option('--warmup-epochs <n>', 'warm-up SFT epochs', Number, DEFAULTS.warmupEpochs)
    .option(
      '--warmup-explore <ε>',
      'probability of a random action in the demonstrations (0: the plan)',
      String(DEFAULTS.warmupExplore),
    )
    .option(
      '--warmup-modes <list>',
      'kinds of warm-up demonstrations: wm, base, base-wm (spa run --warmup-modes)',
      DEFAULTS.warmupModes.join(','),
    )
    .option('--model <name>', 'tiny model to start from', DEFAULTS.model)
    .option(
      '--arms <list>',
      `comma-separated subset of ${ARMS.join(',')} (the default: the arm docs/ppo-check.md shows learning, and its control)`,
      'wm,wm-control',
    )
    .option('--out <dir>', 'folder for the arms, the table and its JSON', 'runs/ppo-check')
    .option(
      '--wm-annotation <kind>',
      "the wm arm's SFT data: gt (SPA) or gt-fill (also fills turns without the tags, for a start model that never saw the world-model format; docs/spa-data.md#fill)",
      'gt',
    )
    .option(
      '--warm-from <folder>',
      "start every arm from this warm-up (an earlier check's <arm run>/warmup), so arms of two checks compare",
    )
    .option(
      '--parallel <n>',
      'arms run side by side, each as soon as its start model exists (above 1: one torch thread each unless OMP_NUM_THREADS is set)',
      Number,
      2,
    );
  program.parse(argv, { from: 'user' });
  return program.opts<CheckOptions>();
}

/**
 * An arm's run id: the out folder's name and the arm, so checks in different folders never share
 * Kafka topics (`spa.<run id>.*`), and a check re-run in the same folder resumes its arms.
 */
const runIdOf = (o: CheckOptions, arm: Arm): string => `${basename(resolve(o.out))}-${arm}`;

/** The `spa run` arguments of one arm (`extra`: its start model and learning settings). */
function armArgs(o: CheckOptions, arm: Arm, extra: readonly string[]): string[] {
  return [
    ...['bin/spa.mjs', 'run', '--runs-dir', resolve(o.out), '--run-id', runIdOf(o, arm)],
    ...[
      '--ppo-steps',
      String(o.steps),
      '--ppo-groups-per-step',
      String(o.groups),
      '--ppo-group-size',
      String(o.groupSize),
      '--ppo-keep-ratio',
      o.keepRatio,
    ],
    ...['--export-every', String(o.exportEvery), '--max-staleness', String(o.maxStaleness)],
    ...['--eval-curve', '--eval-every', String(o.evalEvery), '--ppo-loss-agg', o.lossAgg],
    ...['--ppo-adv-estimator', o.advEstimator],
    ...['--ppo-epochs', String(o.ppoEpochs), '--ppo-mini-batch-size', String(o.miniBatch)],
    ...['--max-new-tokens', o.maxNewTokens],
    ...['--eval-puzzles', String(o.evalPuzzles), '--eval-k', String(o.evalK)],
    ...extra,
  ];
}

const pct = (x: number, se: number) => `${(100 * x).toFixed(1)} ± ${(100 * se).toFixed(1)}`;

/**
 * One row per arm: Pass@1 ± SE at each export (PPO step), the change start → end and the end's lead
 * over the control arm's end (both paired by puzzle, docs/spa-eval.md#paired), wall time.
 */
function table(o: CheckOptions, results: ReadonlyMap<Arm, LoopSummary>): string {
  const steps = Array.from({ length: Math.floor(o.steps / o.evalEvery) + 1 }, (_, i) => i * o.evalEvery);
  if (o.steps % o.evalEvery !== 0) steps.push(o.steps);
  const lines = [
    `| arm | ${steps.map((s) => `step ${s}`).join(' | ')} | end − start | end − control's end | Pass@${o.evalK} start → end | minutes |`,
    `| --- | ${steps.map(() => '---').join(' | ')} | --- | --- | --- | --- |`,
  ];
  const curveOf = (summary: LoopSummary) => summary.evaluations.filter((e) => e.policy !== 'random');
  const paired = (before: EvaluationResult, after: EvaluationResult) => {
    const d = pairedDifference(before, after);
    return pct(d.mean, d.stdErr);
  };
  for (const [arm, summary] of results) {
    const curve = curveOf(summary);
    const [start, end] = [curve[0]!, curve.at(-1)!];
    const controlArm = CONTROL_OF[arm];
    const control = controlArm && results.get(controlArm);
    const overControl = control ? paired(curveOf(control).at(-1)!, end) : '–';
    const minutes = Object.values(summary.seconds).reduce((a, s) => a + s, 0) / 60;
    lines.push(
      `| ${arm} | ${curve.map((e) => pct(e.pass1, e.pass1StdErr)).join(' | ')} | ${paired(start, end)} | ${overControl} | ${pct(start.passK, start.passKStdErr)} → ${pct(end.passK, end.passKStdErr)} | ${minutes.toFixed(1)} |`,
    );
  }
  const floor = [...results.values()][0]?.evaluations.find((e) => e.policy === 'random');
  if (floor) lines.push('', `Random policy (the floor): Pass@1 ${pct(floor.pass1, floor.pass1StdErr)}.`);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2));
  const arms = o.arms.split(',').map((a) => a.trim()) as Arm[];
  if (o.evalEvery % o.exportEvery !== 0)
    throw new Error(`--eval-every ${o.evalEvery}: must be a multiple of --export-every ${o.exportEvery}`);
  for (const arm of arms)
    if (!(ARMS as readonly string[]).includes(arm))
      throw new Error(`--arms: unknown arm "${arm}" (${ARMS.join(', ')})`);
  if (arms.includes('wm-control') && !arms.slice(0, arms.indexOf('wm-control')).includes('wm'))
    throw new Error(
      "--arms: wm-control starts from the wm arm's world-model SFT checkpoint: list wm before it",
    );
  const started = Date.now();
  const learning = [
    '--ppo-actor-lr',
    o.actorLr,
    '--ppo-critic-lr',
    o.criticLr,
    '--ppo-kl-loss-coef',
    o.klCoef,
  ];
  // The first arm warms the model up; every other arm starts from that same checkpoint.
  const warmup = [
    ...['--model', o.model, '--warmup-trajectories', String(o.warmupPuzzles)],
    ...['--warmup-epochs', String(o.warmupEpochs), '--warmup-explore', o.warmupExplore],
    ...['--warmup-modes', o.warmupModes],
  ];
  // Every arm's policy sees the warm-up's window and trains with its decision weight (later arms
  // start from a folder, which spa run would treat as a real model: the whole prompt, weight 1;
  // docs/spa-generation.md#window, docs/spa-sft.md#weights).
  const window = String(alignedContextWindow(DEFAULTS.sftMaxLength, Number(o.maxNewTokens)));
  const tinyRecipe = ['--context-window', window, '--decision-weight', String(DEFAULTS.decisionWeight)];
  const startingFrom = (folder: string) => ['--model', folder, ...tinyRecipe];
  const runDir = (arm: Arm) => join(resolve(o.out), runIdOf(o, arm));
  const warmed = startingFrom(o.warmFrom ? resolve(o.warmFrom) : join(runDir(arms[0]!), 'warmup'));
  const frozen = ['--skip-world-model-sft', '--ppo-actor-lr', '0', '--ppo-critic-lr', '0'];
  const byArm: Record<Arm, string[]> = {
    ppo: ['--skip-world-model-sft', ...learning],
    control: frozen,
    wm: ['--generator', 'self-play', '--annotation', o.wmAnnotation, ...learning],
    'wm-control': frozen,
  };
  // Stage markers (spa run's <run>/stages/<stage>.json) say when a start model is complete.
  const plan = (arm: Arm, start: string[], after?: { arm: Arm; marker: string }): ArmPlan<Arm> => ({
    arm,
    command: [process.execPath, ...armArgs(o, arm, [...start, ...byArm[arm]])],
    summary: join(runDir(arm), 'summary.json'),
    ...(after ? { after } : {}),
  });
  const plans = arms.map((arm, i) => {
    if (arm === 'wm-control')
      return plan(arm, startingFrom(join(runDir('wm'), 'sft')), {
        arm: 'wm',
        marker: join(runDir('wm'), 'stages', 'sft.json'),
      });
    if (o.warmFrom) return plan(arm, warmed);
    if (i === 0) return plan(arm, warmup);
    return plan(arm, warmed, { arm: arms[0]!, marker: join(runDir(arms[0]!), 'stages', 'warm-up-sft.json') });
  });
  // Two arms' torch trainers at two threads each would oversubscribe two cores.
  const env = { ...process.env };
  if (o.parallel > 1) env.OMP_NUM_THREADS ??= '1';
  const results = (await runArms(plans, { parallel: o.parallel, env })) as Map<Arm, LoopSummary>;
  const minutes = (Date.now() - started) / 60_000;
  const text = `${table(o, results)}\n\nWall time of the check: ${minutes.toFixed(1)} min.`;
  console.log(text);
  mkdirSync(o.out, { recursive: true }); // each arm's spa run makes its own folder under it
  writeFileSync(join(o.out, 'ppo-check.md'), `${text}\n`);
  writeFileSync(
    join(o.out, 'ppo-check.json'),
    JSON.stringify({ options: o, minutes, arms: Object.fromEntries(results) }, null, 2) + '\n',
  );
}

await main();
