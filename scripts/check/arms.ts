/**
 * A check's arms for one start model: each a real `spa run` with its own run id, planned for
 * scripts/run-arms.ts (docs/ppo-check.md, docs/spa-check.md).
 * - ppo: the warm-up, then PPO straight away (`--skip-world-model-sft`, the paper's RL-only arm);
 * - control: the same start, steps and data flow with learning rates 0 (the update cannot help);
 * - wm: the same start, world-model SFT on its own ground-truth-annotated self-play, then the
 *   same PPO (SPA's recipe);
 * - wm-control: the wm arm's SFT checkpoint with learning rates 0 (starts once that SFT is done).
 */
import { basename, join, resolve } from 'node:path';
import { alignedContextWindow } from '../../loop/configs.js';
import type { ArmPlan } from '../run-arms.js';
import { RUN_DEFAULTS, type CheckOptions } from './options.js';

const ARMS = ['ppo', 'control', 'wm', 'wm-control'] as const;
export type Arm = (typeof ARMS)[number];

/** Each learning arm's control: the same start, steps and data flow with learning rates 0. */
export const CONTROL_OF: Partial<Record<Arm, Arm>> = { ppo: 'control', wm: 'wm-control' };

/** The arms listed in `--arms`, checked: known names, and wm before wm-control. */
export function parseArms(list: string): Arm[] {
  const arms = list.split(',').map((a) => a.trim()) as Arm[];
  for (const arm of arms)
    if (!(ARMS as readonly string[]).includes(arm))
      throw new Error(`--arms: unknown arm "${arm}" (${ARMS.join(', ')})`);
  if (arms.includes('wm-control') && !arms.slice(0, arms.indexOf('wm-control')).includes('wm'))
    throw new Error(
      "--arms: wm-control starts from the wm arm's world-model SFT checkpoint: list wm before it",
    );
  return arms;
}

/** One start of a check: its name in run ids and arm labels (empty for ppo-check's one start), and its warm-up seed. */
export interface Start {
  readonly name: string;
  readonly warmupSeed: number;
}

/**
 * An arm's run id: the out folder's name, the start and the arm, so checks in different folders
 * never share Kafka topics (`spa.<run id>.*`), and a check re-run in the same folder resumes its arms.
 */
export function runIdOf(o: CheckOptions, start: Start, arm: Arm): string {
  return [basename(resolve(o.out)), start.name, arm].filter((part) => part !== '').join('-');
}

/** The folder of an arm's run. */
export function runDirOf(o: CheckOptions, start: Start, arm: Arm): string {
  return join(resolve(o.out), runIdOf(o, start, arm));
}

/** The `spa run` arguments every arm shares (`extra`: its start model and learning settings). */
function armArgs(o: CheckOptions, runId: string, extra: readonly string[]): string[] {
  return [
    ...['bin/spa.mjs', 'run', '--runs-dir', resolve(o.out), '--run-id', runId],
    ...['--ppo-steps', String(o.steps), '--ppo-groups-per-step', String(o.groups)],
    ...['--ppo-group-size', String(o.groupSize), '--ppo-keep-ratio', o.keepRatio],
    ...['--export-every', String(o.exportEvery), '--max-staleness', String(o.maxStaleness)],
    ...['--eval-curve', '--eval-every', String(o.evalEvery), '--ppo-loss-agg', o.lossAgg],
    ...['--ppo-adv-estimator', o.advEstimator],
    ...['--ppo-epochs', String(o.ppoEpochs), '--ppo-mini-batch-size', String(o.miniBatch)],
    ...['--max-new-tokens', o.maxNewTokens],
    ...['--eval-puzzles', String(o.evalPuzzles), '--eval-k', String(o.evalK)],
    ...extra,
  ];
}

/** The warm-up of a start: what the first arm adds to make the start model. */
function warmupArgs(o: CheckOptions, start: Start): string[] {
  return [
    ...['--model', o.model, '--warmup-trajectories', String(o.warmupPuzzles)],
    ...['--warmup-epochs', String(o.warmupEpochs), '--warmup-explore', o.warmupExplore],
    ...['--warmup-explore-modes', o.warmupExploreModes],
    // the starts train in the SFT's batches, as every recorded start did (docs/spa-check.md#start)
    ...['--warmup-lr', o.warmupLr, '--warmup-batch-size', String(o.sftBatchSize)],
    ...['--warmup-modes', o.warmupModes, '--warmup-states', o.warmupStates],
    ...['--warmup-seed', String(start.warmupSeed)],
  ];
}

/** Where a start's warm-up is: `--warm-from`, or the first arm's `<run>/warmup`. */
export function warmupDirOf(o: CheckOptions, start: Start, arms: readonly Arm[]): string {
  return o.warmFrom ? resolve(o.warmFrom) : join(runDirOf(o, start, arms[0]!), 'warmup');
}

/**
 * The arms of one start: the first warms the model up (unless `--warm-from`), the others start from
 * that checkpoint once its stage marker exists; wm-control from the wm arm's SFT checkpoint.
 */
export function armPlans(o: CheckOptions, arms: readonly Arm[], start: Start): ArmPlan<string>[] {
  const learning = [
    '--ppo-actor-lr',
    o.actorLr,
    '--ppo-critic-lr',
    o.criticLr,
    '--ppo-kl-loss-coef',
    o.klCoef,
  ];
  // Every arm's policy sees the warm-up's window and trains with its decision weight (later arms
  // start from a folder, which spa run would treat as a real model: the whole prompt, weight 1;
  // docs/spa-generation.md#window, docs/spa-sft.md#weights).
  const window = String(alignedContextWindow(RUN_DEFAULTS.sftMaxLength, Number(o.maxNewTokens)));
  const tinyRecipe = ['--context-window', window, '--decision-weight', String(RUN_DEFAULTS.decisionWeight)];
  const startingFrom = (folder: string) => ['--model', folder, ...tinyRecipe];
  const runDir = (arm: Arm) => runDirOf(o, start, arm);
  const frozen = ['--skip-world-model-sft', '--ppo-actor-lr', '0', '--ppo-critic-lr', '0'];
  const byArm: Record<Arm, string[]> = {
    ppo: ['--skip-world-model-sft', ...learning],
    control: frozen,
    wm: [
      ...['--generator', 'self-play', '--annotation', o.wmAnnotation, ...learning],
      ...['--sft-lr', o.sftLr, '--sft-epochs', String(o.sftEpochs), '--sft-groups', '32'],
      ...['--sft-batches', String(Math.max(1, Math.round(o.sftPuzzles / 32))), '--sft-prompts', o.sftPrompts],
      ...['--sft-batch-size', String(o.sftBatchSize), '--sft-decision-weight', o.sftDecisionWeight],
    ],
    'wm-control': frozen,
  };
  const label = (arm: Arm) => (start.name ? `${start.name}:${arm}` : arm);
  // Stage markers (spa run's <run>/stages/<stage>.json) say when a start model is complete.
  const plan = (arm: Arm, from: string[], after?: { arm: Arm; marker: string }): ArmPlan<string> => ({
    arm: label(arm),
    command: [process.execPath, ...armArgs(o, runIdOf(o, start, arm), [...from, ...byArm[arm]])],
    summary: join(runDir(arm), 'summary.json'),
    ...(after ? { after: { arm: label(after.arm), marker: after.marker } } : {}),
  });
  const warmed = startingFrom(warmupDirOf(o, start, arms));
  return arms.map((arm, i) => {
    if (arm === 'wm-control')
      return plan(arm, startingFrom(join(runDir('wm'), 'sft')), {
        arm: 'wm',
        marker: join(runDir('wm'), 'stages', 'sft.json'),
      });
    if (o.warmFrom) return plan(arm, warmed);
    if (i === 0) return plan(arm, warmupArgs(o, start));
    return plan(arm, warmed, { arm: arms[0]!, marker: join(runDir(arms[0]!), 'stages', 'warm-up-sft.json') });
  });
}
