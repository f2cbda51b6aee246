import type { PromptMode } from '../envs/protocol/index.js';
import type { EnvName } from '../envs/types.js';
import type { Annotation } from '../operators/annotate-ground-truth.js';

/**
 * The loop's knobs; SPA's full sizes are in the comments (docs/spa-data.md, docs/spa-sft.md,
 * docs/spa-ppo.md, docs/spa-eval.md).
 */
export interface LoopConfig {
  readonly name: string;
  readonly env: EnvName;
  /**
   * Policy that generates the world-model SFT data: `self-play` (SPA: the model being trained,
   * exported as policy v0), or `oracle` / `random` (the random-generator ablation).
   */
  readonly generator: 'self-play' | 'random' | 'oracle';
  /**
   * Generator processes of the SFT data stage and of self-play during PPO: n `spa generate
   * --shard i/n` processes that split each stage's groups (docs/scaling.md#sharded-generators), one by
   * default. The warm-up's oracle demonstrations play in `spa run`'s own process.
   */
  readonly generators: number;
  /**
   * Format warm-up before self-play: SFT on this many oracle demonstration trajectories (group
   * size 1) for `warmupEpochs`, so a model that cannot write the format yet (the tiny model's
   * random weights) produces usable self-play data. 0 = none (a real instruction-tuned model).
   */
  readonly warmupTrajectories: number;
  readonly warmupEpochs: number;
  /**
   * The warm-up SFT's learning rate: training from random weights. World-model SFT then continues
   * at `sftLr`, a finetuning rate; at the warm-up's rate it unlearns the base prompts'
   * answers (docs/spa-loop.md#learning).
   */
  readonly warmupLr: number;
  /**
   * Rows per warm-up optimizer step, all in one forward pass (world-model SFT has its own,
   * `sftBatchSize`). 8 at 4.5e-3 makes the default run 0.76–0.81× as long, but its world-model SFT
   * then costs v0 2–3 points (docs/experiments/2026-11-29-default-run-time.md), so the default stays 4.
   */
  readonly warmupBatchSize: number;
  /** Envs whose SFT rows must pass SPA's `is_good_response` (SPA: FrozenLake and Sudoku, not Sokoban). */
  readonly filterEnvs: readonly EnvName[];
  /** Also reject SFT rows whose turn the parser refused (not in SPA; docs/spa-data.md#filter). */
  readonly filterParserReasons: boolean;
  /**
   * How the SFT data's `<observation>`/`<prediction>` are filled (docs/spa-data.md#replacement):
   * `gt` (SPA); `gt-fill` also gives the true states to turns written without the tags, for a start
   * model that cannot follow the world-model format yet (docs/spa-data.md#fill); the ablations.
   */
  readonly annotation: Annotation;
  /**
   * Oracle demonstrations of the warm-up: the probability ε that a turn's action is uniformly
   * random instead of the plan's (seeded; needs one action per turn). 0 = the oracle's plan.
   */
  readonly warmupExplore: number;
  /**
   * The kinds of warm-up demonstrations (`warmupModes`) that explore at `warmupExplore`; the others
   * follow the plan. Exploring the world-model prompts only (`wm`) shows the dynamics of actions the
   * plan would not take, while the PPO and evaluation prompts keep the oracle's policy.
   */
  readonly warmupExploreModes: readonly WarmupMode[];
  /** Oracle demonstrations of the warm-up: the most actions a turn names (SPA allows 5 a turn in Sokoban). */
  readonly warmupActionsPerTurn: number;
  /**
   * What the warm-up's world-model turns write in `<observation>`/`<prediction>`: `true` (the true
   * states: the warm-up teaches the board and its dynamics) or `empty` (empty tags: the format only,
   * so with `warmupExplore` 1 the start knows neither policy nor dynamics, as the paper's base
   * model; docs/spa-check.md#start).
   */
  readonly warmupStates: WarmupStates;
  /**
   * The warm-up's seed: its puzzles, its demonstrations' random actions and its SFT's row order.
   * Another seed gives an independent start of the same recipe (`npm run spa-check`'s starts).
   */
  readonly warmupSeed: number;
  /**
   * Kinds of warm-up demonstrations, `warmupTrajectories` distinct puzzles each
   * (docs/spa-loop.md#warm-up): `wm` (world-model prompts and responses, as self-play data),
   * `base` (the PPO and evaluation prompts, answered with thoughts and an answer) and `base-wm`
   * (those base prompts answered with world-model turns: `<observation>`, thought, `<prediction>`,
   * answer). A tiny model from random weights follows only what it saw.
   */
  readonly warmupModes: readonly WarmupMode[];
  /**
   * Loss weight of the response tokens where the model decides (thoughts, tags, answer: everything
   * outside the `<observation>`/`<prediction>` contents) against the state tokens' 1, in the warm-up's
   * SFT (`spa_trainer.sft --decision-weight`). 1 = SPA's plain mean; a tiny model's one action
   * token is otherwise drowned by ~150 state tokens (docs/spa-sft.md#weights).
   */
  readonly decisionWeight: number;
  /**
   * The same weight in the world-model SFT. A tiny model's policy, learned in the warm-up, drifts
   * when the world-model SFT's state tokens outweigh its decisions (docs/spa-loop.md#sft-mix).
   */
  readonly sftDecisionWeight: number;
  /** No world-model SFT: PPO starts from the (warmed-up) model, the paper's RL-only baseline. */
  readonly skipWorldModelSft: boolean;
  /**
   * The prompts the self-play SFT data is played with, each on its own groups × group size ×
   * batches trajectories: `wm` (SPA) and `base`, the PPO and evaluation prompts, which a tiny
   * model answers with world-model turns too; their rows keep a world-model SFT at the warm-up's
   * rate from unlearning those prompts' answers (docs/spa-loop.md#sft-mix).
   */
  readonly sftPrompts: readonly PromptMode[];
  /** SFT data: groups × group size × batches trajectories (SPA: 32 × 8 × 5 = 1280). */
  readonly sftGroups: number;
  readonly sftGroupSize: number;
  readonly sftBatches: number;
  /** SFT epochs (SPA: 5). */
  readonly sftEpochs: number;
  /** SFT learning rate (SPA: 1e-4 for a pretrained 1.5B model). */
  readonly sftLr: number;
  /** Rows per SFT optimizer step (SPA: global batch 16). */
  readonly sftBatchSize: number;
  /**
   * SFT rows per forward pass: speed and memory only, the loss is the same for any size
   * (docs/spa-sft.md#target). SPA: 1 (a 1.5B model per GPU); a tiny model's step is mostly per-pass
   * overhead, so one pass a step trains it about 1.5× faster (issue 43).
   */
  readonly sftMicroBatchSize: number;
  /** SFT window in tokens, left-truncated (SPA: 2048). */
  readonly sftMaxLength: number;
  /** PPO: steps, each on groups × group size self-play episodes (SPA: 1000 steps of 32 × 8, top 25% kept). */
  readonly ppoSteps: number;
  readonly ppoGroupsPerStep: number;
  readonly ppoGroupSize: number;
  /** PPO: the fraction of each step's groups kept, those with the largest score spread (SPA: 0.25). */
  readonly ppoKeepRatio: number;
  /** Export + publish a new policy every N PPO steps (and after the last). */
  readonly exportEvery: number;
  /**
   * PPO trains on records at most this many versions behind its own; the generator's admission
   * rule derives from this and `exportEvery` (docs/spa-schedule.md), so any combination finishes.
   */
  readonly maxStaleness: number;
  /** PPO learning rates of the actor and the critic (SPA: 1e-6 and 1e-5 for a pretrained 1.5B model). */
  readonly ppoActorLr: number;
  readonly ppoCriticLr: number;
  /**
   * Sequences per PPO forward pass: memory and speed only, the update is the same for any size
   * (docs/spa-ppo.md#aggregation). SPA: 1 (a 1.5B model per GPU).
   */
  readonly ppoMicroBatchSize: number;
  /** PPO: passes over each step's episodes (SPA: 1). */
  readonly ppoEpochs: number;
  /** PPO: episodes per optimizer step (SPA: 64, one step per update of 64 kept episodes). */
  readonly ppoMiniBatchSize: number;
  /**
   * PPO loss mask (docs/spa-ppo.md#mask): `generated` (the paper: the tokens the policy sampled),
   * `response-only` (RAGEN: whole assistant turns, role header included) or `all-after-system`
   * (SPA's released run: every token after the system message).
   */
  readonly ppoMask: 'generated' | 'response-only' | 'all-after-system';
  /**
   * How PPO losses average over a mini-batch (docs/spa-ppo.md#aggregation): `token-mean` over all
   * its trained tokens (SPA's configured `loss_agg_mode`), or `seq-mean-token-mean`, the mean of
   * per-sequence token means that SPA's released run computes (verl's per-micro-batch mean, micro-batch 1).
   */
  readonly ppoLossAgg: 'token-mean' | 'seq-mean-token-mean';
  /** k3 KL of the actor to its start model in the PPO loss (docs/spa-ppo.md#kl). SPA: 0 (off). */
  readonly ppoKlLossCoef: number;
  /**
   * PPO advantages (docs/spa-ppo.md#grpo): `gae` with the critic (SPA), `grpo` each episode's score
   * against its group's mean and std, `grpo-mean` against its group's mean only (Dr. GRPO); no critic.
   */
  readonly ppoAdvEstimator: 'gae' | 'grpo' | 'grpo-mean';
  /** Evaluation: puzzles × k (SPA: 128 × 8). */
  readonly evalPuzzles: number;
  readonly evalK: number;
  /** Passes over the validation puzzles, averaged (SPA: 2). */
  readonly evalPasses: number;
  /** Also evaluate the SFT policy (v1), not only the final one. */
  readonly evalSftPolicy: boolean;
  /** Evaluate every exported policy version (a learning curve), not only the final one. */
  readonly evalCurve: boolean;
  /** With `evalCurve`: evaluate the policy of every n-th PPO step only (0: every exported version). */
  readonly evalEvery: number;
  /** Tokens per assistant turn for the ONNX policy (SPA: 400). */
  readonly maxNewTokens: number;
  /**
   * Tokens the ONNX policy attends to (0 = the whole prompt, SPA): a longer prompt loses its left
   * part, as SFT's left-truncated window did: a model trained from random weights has seen
   * nothing wider (docs/spa-generation.md#window). `spa run` makes it 0 for a real model unless set.
   */
  readonly contextWindow: number;
  /** Also end an ONNX turn at `</answer>` (SPA generates to eos or the budget). */
  readonly stopAtAnswer: boolean;
  /** A tiny model built here (`TINY_MODELS`) or a local Hugging Face folder. */
  readonly model: string;
  /** Where ONNX generation and the trainer run. */
  readonly device: 'cpu' | 'cuda';
  /**
   * Trainer processes: above 1, SFT and PPO run under torchrun on this many data-parallel ranks
   * (one GPU each with `device: cuda`), with the same batches (trainer/README.md, "Data-parallel training").
   */
  readonly trainerProcs: number;
  /**
   * Where the trainers' curves go besides their JSON lines (TRL's `report_to`): `tensorboard`
   * (`<run>/tensorboard/<stage>`), `wandb` (offline unless `WANDB_MODE` is set), both, or `none`.
   */
  readonly reportTo: readonly ReportTarget[];
}

/** Destinations of the trainers' curves (spa_trainer.training.reporting). */
export const REPORT_TARGETS = ['none', 'tensorboard', 'wandb'] as const;
type ReportTarget = (typeof REPORT_TARGETS)[number];

/** Kinds of warm-up demonstration: prompt mode, and `base-wm` for base prompts with world-model answers. */
export const WARMUP_MODES = ['wm', 'base', 'base-wm'] as const;
export type WarmupMode = (typeof WARMUP_MODES)[number];

/** What the warm-up's world-model turns hold in their state tags (`LoopConfig.warmupStates`). */
export const WARMUP_STATES = ['true', 'empty'] as const;
type WarmupStates = (typeof WARMUP_STATES)[number];

/** The prompt mode a warm-up demonstration is played in, and the mode its oracle answers in. */
export function warmupModeParts(mode: WarmupMode): { prompt: PromptMode; response: PromptMode } {
  return mode === 'base-wm' ? { prompt: 'base', response: 'wm' } : { prompt: mode, response: mode };
}

/** Models the trainer builds locally from random weights (spa_trainer.models.tiny.TINY_MODELS). */
export const TINY_MODELS: readonly string[] = ['tiny', 'tiny-cells', 'tiny-local'];

/** Tokens of the oracle's one-action world-model turn (`Shortest plan: Down.`) in the tiny models' tokenizers. */
const ONE_ACTION_TURN_TOKENS = 173;

/**
 * The ONNX policy's context window that keeps the prompt tokens SFT's window showed the model beside
 * a one-action world-model turn: `sftMaxLength − 173` prompt tokens (340: the current turn's state
 * block, no earlier turn), plus the generation budget (docs/spa-generation.md#window).
 */
export function alignedContextWindow(sftMaxLength: number, maxNewTokens: number): number {
  return Math.max(sftMaxLength - ONE_ACTION_TURN_TOKENS, 1) + maxNewTokens;
}

/**
 * The default size: minutes on 2 CPU cores. The tiny model (`tiny-local`) starts from random
 * weights, so SPA's recipe gets a warm-up first (docs/spa-loop.md#warm-up): one pass over the oracle's
 * one-action turns on 2 × 3072 distinct puzzles, world-model prompts and base prompts both answered
 * with world-model turns, the decision tokens weighted 20×; on the world-model prompts half the
 * actions are random, so the next state must be read from the named action. Then the warmed-up
 * model plays 256 distinct puzzles itself (self-play, group size 1) and is finetuned on its
 * ground-truth-annotated turns at SPA's learning rate, in small batches, through a 340-token window.
 * Evaluation plays the paper's 128 validation puzzles 4 times (Pass@1's standard error about 2.5
 * points): the self-play policy, the policy PPO starts from and the final one.
 */
const small = {
  generator: 'self-play',
  generators: 1,
  warmupTrajectories: 3072,
  warmupEpochs: 1,
  warmupLr: 3e-3,
  warmupBatchSize: 4,
  warmupExplore: 0.5,
  warmupExploreModes: ['wm'], // the PPO and evaluation prompts keep the plan (docs/spa-loop.md#warm-up)
  warmupActionsPerTurn: 1,
  warmupStates: 'true',
  warmupSeed: 0,
  warmupModes: ['wm', 'base-wm'],
  decisionWeight: 20,
  sftDecisionWeight: 100,
  skipWorldModelSft: false,
  filterEnvs: ['frozenlake', 'sudoku'],
  filterParserReasons: false,
  annotation: 'gt',
  sftPrompts: ['wm'],
  sftGroups: 32,
  sftGroupSize: 1,
  sftBatches: 8,
  sftEpochs: 1,
  sftLr: 5e-5, // half SPA's: a warmed-up tiny model's policy drifts at 1e-4 (docs/spa-loop.md#sft-mix)
  sftBatchSize: 4,
  sftMicroBatchSize: 4, // the whole step in one pass
  sftMaxLength: 340,
  ppoSteps: 3,
  ppoGroupsPerStep: 4,
  ppoGroupSize: 4,
  ppoKeepRatio: 0.25,
  exportEvery: 1,
  maxStaleness: 1,
  ppoActorLr: 1e-4,
  ppoCriticLr: 1e-3,
  ppoMicroBatchSize: 16,
  ppoEpochs: 1,
  ppoMiniBatchSize: 64,
  ppoMask: 'generated',
  ppoLossAgg: 'token-mean',
  ppoKlLossCoef: 0,
  ppoAdvEstimator: 'gae',
  evalPuzzles: 128,
  evalK: 4,
  evalPasses: 1,
  evalSftPolicy: true, // the policy before PPO beside the final one: what each stage added
  evalCurve: false,
  evalEvery: 0,
  maxNewTokens: 200, // the oracle's one-action world-model turns are 173 tiny-cells tokens; an unsure model rambles on
  stopAtAnswer: false,
  contextWindow: alignedContextWindow(340, 200), // 367; 0 for a real model
  model: 'tiny-local',
  device: 'cpu',
  trainerProcs: 1,
  reportTo: ['tensorboard'],
} as const;

/**
 * SPA's sizes for a real model (`--full`): docs/spa-data.md#generation (1280 trajectories),
 * docs/spa-sft.md#settings, docs/spa-ppo.md#hyperparameters, docs/spa-eval.md#validation.
 */
export const SPA_FULL_SIZE = {
  sftGroups: 32,
  sftGroupSize: 8,
  sftBatches: 5,
  sftEpochs: 5,
  sftLr: 1e-4,
  sftBatchSize: 16,
  sftMicroBatchSize: 1,
  sftMaxLength: 2048,
  ppoSteps: 1000,
  ppoGroupsPerStep: 32,
  ppoGroupSize: 8,
  ppoKeepRatio: 0.25,
  exportEvery: 10,
  ppoActorLr: 1e-6,
  ppoCriticLr: 1e-5,
  ppoMicroBatchSize: 1,
  evalPuzzles: 128,
  evalK: 8,
  evalPasses: 2,
  evalSftPolicy: true,
  maxNewTokens: 400,
  contextWindow: 0,
} as const;

/** SPA's config names (`SPA/run_spa.sh <CONFIG_NAME>`), at a small default size. */
export const LOOP_CONFIGS: Readonly<Record<string, LoopConfig>> = {
  _2_sokoban: { name: '_2_sokoban', env: 'sokoban', ...small },
  _3_frozen_lake: { name: '_3_frozen_lake', env: 'frozenlake', ...small },
  _10_sudoku: { name: '_10_sudoku', env: 'sudoku', ...small },
};

export function loopConfig(name: string): LoopConfig {
  const config = LOOP_CONFIGS[name];
  if (!config)
    throw new Error(`unknown config "${name}": expected one of ${Object.keys(LOOP_CONFIGS).join(', ')}`);
  return config;
}
