/**
 * The options ppo-check and spa-check share: the PPO settings of the learning arms, the evaluation,
 * the warm-up that makes every arm's start and the wm arm's world-model SFT. Each check passes its
 * own defaults (docs/ppo-check.md, docs/spa-check.md).
 */
import { Command } from 'commander';
import { loopConfig } from '../../loop/configs.js';

export interface CheckOptions {
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
  warmupLr: string;
  warmupExplore: string;
  warmupExploreModes: string;
  warmupModes: string;
  warmupStates: string;
  sftLr: string;
  sftEpochs: number;
  sftPuzzles: number;
  sftPrompts: string;
  sftBatchSize: number;
  sftDecisionWeight: string;
  model: string;
  arms: string;
  out: string;
  warmFrom?: string;
  wmAnnotation: string;
  parallel: number;
  ppoEpochs: number;
  miniBatch: number;
}

/** spa run's default recipe for a tiny model. */
export const RUN_DEFAULTS = loopConfig('_2_sokoban');

/** What a check changes from {@link RUN_DEFAULTS} and the PPO defaults below. */
export type CheckDefaults = Partial<CheckOptions> & Pick<CheckOptions, 'arms' | 'out'>;

/** The options of a check named `name`, defaulting to `defaults`, then to spa run's recipe. */
export function checkProgram(name: string, defaults: CheckDefaults): Command {
  return startOptions(ppoOptions(new Command(name), defaults), defaults);
}

/** The learning arms' PPO and the evaluation. */
function ppoOptions(program: Command, d: CheckDefaults): Command {
  const r = RUN_DEFAULTS;
  return program
    .option('--steps <n>', 'PPO steps per arm', Number, d.steps ?? 30)
    .option('--groups <n>', 'puzzles per PPO step', Number, d.groups ?? 16)
    .option('--group-size <n>', 'episodes per puzzle', Number, d.groupSize ?? 8)
    .option('--keep-ratio <x>', "fraction of a step's groups trained on, by score spread (SPA: 0.25)", '1')
    .option('--export-every <n>', 'PPO steps between exports (1: every step, as SPA)', Number, 1)
    .option(
      '--max-staleness <n>',
      'policy versions a trained batch may lag (0: on-policy, as SPA)',
      Number,
      0,
    )
    .option(
      '--eval-every <n>',
      'PPO steps between evaluations (a multiple of --export-every)',
      Number,
      d.evalEvery ?? 10,
    )
    .option(
      '--loss-agg <mode>',
      'PPO loss aggregation: token-mean or seq-mean-token-mean',
      d.lossAgg ?? 'token-mean',
    )
    .option(
      '--kl-coef <x>',
      'KL-to-start-model loss coefficient of the learning arms (0: off, as SPA)',
      d.klCoef ?? '0.01',
    )
    .option(
      '--adv-estimator <name>',
      'PPO advantages: gae (a critic, as SPA), grpo or grpo-mean (docs/spa-ppo.md#grpo)',
      'grpo-mean',
    )
    .option(
      '--max-new-tokens <n>',
      "tokens per assistant turn in self-play and evaluation (spa run's: a one-action world-model turn fits)",
      String(r.maxNewTokens),
    )
    .option(
      '--eval-puzzles <n>',
      'validation puzzles per evaluation (seeds from 123)',
      Number,
      d.evalPuzzles ?? 128,
    )
    .option('--eval-k <n>', 'episodes per validation puzzle', Number, d.evalK ?? 16)
    .option('--ppo-epochs <n>', "passes over each step's episodes (SPA: 1)", Number, 1)
    .option('--mini-batch <n>', 'episodes per optimizer step (SPA: 64)', Number, 64)
    .option('--actor-lr <x>', 'PPO actor learning rate of the learning arms', d.actorLr ?? '2e-4')
    .option('--critic-lr <x>', 'PPO critic learning rate of the learning arms', '1e-3');
}

/** The start models: the warm-up, the wm arm's world-model SFT, the arms and where they run. */
function startOptions(program: Command, d: CheckDefaults): Command {
  const r = RUN_DEFAULTS;
  return program
    .option(
      '--warmup-puzzles <n>',
      'demonstrations of the warm-up, per kind',
      Number,
      d.warmupPuzzles ?? r.warmupTrajectories,
    )
    .option('--warmup-epochs <n>', 'warm-up SFT epochs', Number, d.warmupEpochs ?? r.warmupEpochs)
    .option(
      '--warmup-lr <x>',
      'warm-up SFT learning rate (its batch: --sft-batch-size)',
      d.warmupLr ?? String(r.warmupLr),
    )
    .option(
      '--warmup-explore <ε>',
      'probability of a random action in the demonstrations (0: the plan)',
      d.warmupExplore ?? String(r.warmupExplore),
    )
    .option(
      '--warmup-explore-modes <list>',
      'the kinds of warm-up demonstrations that explore (spa run --warmup-explore-modes)',
      d.warmupExploreModes ?? r.warmupExploreModes.join(','),
    )
    .option(
      '--warmup-modes <list>',
      'kinds of warm-up demonstrations: wm, base, base-wm (spa run --warmup-modes)',
      d.warmupModes ?? r.warmupModes.join(','),
    )
    .option(
      '--warmup-states <kind>',
      'what the warm-up turns write in the state tags: true, or empty (the format only; docs/spa-check.md#start)',
      d.warmupStates ?? r.warmupStates,
    )
    .option('--sft-lr <x>', "the wm arm's world-model SFT learning rate", d.sftLr ?? String(r.sftLr))
    .option('--sft-epochs <n>', "the wm arm's world-model SFT epochs", Number, d.sftEpochs ?? r.sftEpochs)
    .option(
      '--sft-puzzles <n>',
      "the wm arm's self-play puzzles (one trajectory each; rounded to a multiple of 32)",
      Number,
      d.sftPuzzles ?? r.sftGroups * r.sftBatches,
    )
    .option(
      '--sft-prompts <modes>',
      "the prompts of the wm arm's self-play, each on --sft-puzzles puzzles (spa run --sft-prompts)",
      d.sftPrompts ?? r.sftPrompts.join(','),
    )
    .option(
      '--sft-batch-size <n>',
      "rows per step of the wm arm's SFT",
      Number,
      d.sftBatchSize ?? r.sftBatchSize,
    )
    .option(
      '--sft-decision-weight <x>',
      "the wm arm's SFT loss weight of the decision tokens (docs/spa-sft.md#weights)",
      d.sftDecisionWeight ?? String(r.sftDecisionWeight),
    )
    .option('--model <name>', 'tiny model to start from', r.model)
    .option('--arms <list>', 'comma-separated subset of ppo,control,wm,wm-control', d.arms)
    .option('--out <dir>', 'folder for the arms, the table and its JSON', d.out)
    .option(
      '--wm-annotation <kind>',
      "the wm arm's SFT data: gt (SPA) or gt-fill (also fills turns without the tags; docs/spa-data.md#fill)",
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
      d.parallel ?? 2,
    );
}
