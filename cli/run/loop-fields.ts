/**
 * Every knob of the SPA loop, once: each `LoopConfig` field's command-line option and config-file
 * key (`spa run --sft-lr 1e-4`, `sft-lr: 1e-4` in `--config-file`), with the parser that checks
 * both. Adding a field to `LoopConfig` means adding its entry here (the table's type requires one
 * per field); the flag, the YAML key, `spa run --help` and the error messages follow from it.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import {
  envList,
  listOf,
  MAX_ACTIONS_PER_TURN,
  MAX_BATCH_EPISODES,
  MAX_BATCH_ROWS,
  MAX_BATCHES,
  MAX_EPOCHS,
  MAX_EVAL_EPISODES,
  MAX_GROUP_SIZE,
  MAX_GROUPS,
  MAX_LOSS_WEIGHT,
  MAX_LR,
  MAX_PASSES,
  MAX_PROCESSES,
  MAX_STALENESS,
  MAX_TOKENS,
  nonNegativeInt,
  nonNegativeNumber,
  oneOf,
  positiveInt,
  positiveNumber,
  probability,
} from '../options.js';
import { ANNOTATIONS } from '../../operators/annotate-ground-truth.js';
import {
  REPORT_TARGETS,
  TINY_MODELS,
  WARMUP_MODES,
  WARMUP_STATES,
  loopConfig,
  type LoopConfig,
} from '../../loop/configs.js';

/** A field set by a value (`--sft-groups <n>`), checked by `parse(flag)`. */
interface ValueField<T> {
  readonly help: string;
  readonly arg: string;
  /** A commander parser whose errors name `flag`; the config file uses the same one. */
  readonly parse: (flag: string) => (text: string) => T;
  /** The long option and YAML key when not the field's name in kebab case. */
  readonly flag?: string;
  /** An earlier long option and YAML key of the field: still read, with a notice naming the new one. */
  readonly was?: string;
}

/** A true/false field: a bare flag on the command line, `true`/`false` in the file. */
interface ToggleField {
  readonly help: string;
  readonly flag?: string;
}

type LoopField<T> = [T] extends [boolean] ? ToggleField : ValueField<T>;

/** `--config` sets these (SPA's config name and its environment); they are not knobs of their own. */
type SetByConfigName = 'name' | 'env';

/** One entry per `LoopConfig` field. */
export type LoopFieldTable = {
  readonly [K in Exclude<keyof LoopConfig, SetByConfigName>]: LoopField<LoopConfig[K]>;
};

/** Warm-up seeds offset its puzzle seeds by a million each; Avro ints hold about 2,100 of them. */
const MAX_WARMUP_SEED = 1000;

/** A count in 1..max. */
const count = (help: string, max: number): ValueField<number> => ({
  help,
  arg: '<n>',
  parse: (flag) => positiveInt(flag, max),
});
/** A count in 0..max. */
const countFromZero = (help: string, max: number): ValueField<number> => ({
  help,
  arg: '<n>',
  parse: (flag) => nonNegativeInt(flag, max),
});
/** A rate in (0, max], or [0, max] when `zeroAllowed`. */
const rate = (help: string, max: number, zeroAllowed = false): ValueField<number> => ({
  help,
  arg: '<x>',
  parse: (flag) => (zeroAllowed ? nonNegativeNumber(flag, max) : positiveNumber(flag, max)),
});
const choice = <T extends string>(choices: readonly T[], help: string): ValueField<T> => ({
  help: `${choices.join(' | ')}: ${help}`,
  arg: '<name>',
  parse: (flag) => oneOf(flag, choices),
});

export const LOOP_FIELDS: LoopFieldTable = {
  generator: choice(
    ['self-play', 'oracle', 'random'],
    'SFT data generator (SPA: self-play, the model being trained; random is the ablation)',
  ),
  generators: count(
    'generator processes of the SFT data and of self-play during PPO; n > 1 runs n `spa generate --shard i/n` that split the groups (default 1: in this process)',
    MAX_PROCESSES,
  ),
  warmupTrajectories: countFromZero(
    'format warm-up: oracle demonstrations before self-play (0: none; default: the size default for a tiny model, 0 for a real model)',
    MAX_GROUPS,
  ),
  warmupEpochs: count('format warm-up: SFT epochs', MAX_EPOCHS),
  warmupLr: rate('format warm-up: SFT learning rate (from random weights)', MAX_LR),
  warmupBatchSize: count('format warm-up: SFT rows per optimizer step (one forward pass)', MAX_BATCH_ROWS),
  warmupExplore: {
    help: "format warm-up: probability of a uniformly random action instead of the oracle's (needs --warmup-actions-per-turn 1)",
    arg: '<ε>',
    parse: probability,
  },
  warmupExploreModes: {
    help: 'format warm-up: the kinds of demonstrations that explore at --warmup-explore; the others follow the plan (wm: the self-play prompts only, so PPO and evaluation prompts keep the plan)',
    arg: '<modes>',
    parse: (flag) => listOf(flag, WARMUP_MODES),
  },
  warmupActionsPerTurn: {
    help: 'format warm-up: the most actions a demonstrated turn names (1–5; SPA allows 5 in Sokoban)',
    arg: '<n>',
    parse: (flag) => positiveInt(flag, MAX_ACTIONS_PER_TURN),
  },
  warmupStates: choice(
    WARMUP_STATES,
    'format warm-up: what the world-model turns write in <observation>/<prediction> (true: the true states; empty: empty tags, the format only, docs/spa-check.md#start)',
  ),
  warmupSeed: countFromZero(
    'format warm-up: seed of its puzzles, random actions and SFT row order (another seed: an independent start)',
    MAX_WARMUP_SEED,
  ),
  warmupModes: {
    help: 'format warm-up: kinds of demonstrations, each on warmupTrajectories puzzles (wm = self-play prompts, base = PPO/eval prompts, base-wm = PPO/eval prompts answered with world-model turns)',
    arg: '<modes>',
    parse: (flag) => listOf(flag, WARMUP_MODES),
  },
  decisionWeight: rate(
    "warm-up SFT loss weight of the response tokens outside <observation>/<prediction> contents against the states' 1 (1: SPA; default: 20 for a tiny model, 1 for a real one)",
    MAX_LOSS_WEIGHT,
  ),
  sftDecisionWeight: rate(
    'the same weight in the world-model SFT (1: SPA; default: 100 for a tiny model, 1 for a real one)',
    MAX_LOSS_WEIGHT,
  ),
  skipWorldModelSft: {
    help: "no world-model SFT: PPO from the (warmed-up) model, the paper's RL-only baseline",
  },
  filterEnvs: {
    help: "SFT data: envs whose rows must pass SPA's structural filter, or none (SPA: frozenlake,sudoku)",
    arg: '<envs>',
    parse: envList,
  },
  filterParserReasons: {
    help: 'SFT data: also reject rows whose turn the parser refused (answer-only, empty-answer, unknown-action; not in SPA)',
  },
  annotation: choice(
    ANNOTATIONS,
    'SFT data: how <observation>/<prediction> are filled (SPA: gt; gt-fill also fills turns written without the tags, docs/spa-data.md#fill)',
  ),
  sftPrompts: {
    help: 'self-play SFT data: the prompts played, each on its own puzzles (SPA: wm; default: wm,base for a tiny model, which answers the base prompts of PPO and evaluation with world-model turns too, docs/spa-loop.md#sft-mix)',
    arg: '<modes>',
    parse: (flag) => listOf(flag, ['wm', 'base'] as const),
  },
  sftGroups: count(
    `SFT data: groups (puzzles) per batch (SPA: 32); groups × group size at most ${MAX_BATCH_EPISODES}`,
    MAX_GROUPS,
  ),
  sftGroupSize: count('SFT data: trajectories per group (SPA: 8)', MAX_GROUP_SIZE),
  sftBatches: count('SFT data: batches (SPA: 5)', MAX_BATCHES),
  sftEpochs: count('SFT epochs (SPA: 5)', MAX_EPOCHS),
  sftLr: rate('SFT learning rate (SPA: 1e-4)', MAX_LR),
  sftBatchSize: count('SFT rows per optimizer step (SPA: 16)', MAX_BATCH_ROWS),
  sftMicroBatchSize: count(
    'SFT rows per forward pass; memory and speed only, the loss is the same (SPA: 1)',
    MAX_BATCH_ROWS,
  ),
  sftMaxLength: count('SFT window in tokens, left-truncated (SPA: 2048)', MAX_TOKENS),
  ppoSteps: count('PPO steps (SPA: 1000)', MAX_BATCHES),
  ppoGroupsPerStep: {
    ...count(
      `PPO: groups (puzzles) per step (SPA: 32); groups × group size at most ${MAX_BATCH_EPISODES}`,
      MAX_GROUPS,
    ),
    was: 'ppo-groups',
  },
  ppoGroupSize: count('PPO: episodes per group (SPA: 8)', MAX_GROUP_SIZE),
  ppoKeepRatio: {
    help: "PPO: fraction of each step's groups trained on, those with the largest score spread (SPA: 0.25; 1 keeps every group)",
    arg: '<x>',
    parse: (flag) => positiveNumber(flag, 1),
  },
  exportEvery: count('PPO: export and publish a new policy every n steps (--full: 10)', MAX_BATCHES),
  maxStaleness: countFromZero(
    'PPO: train on records at most n policy versions old; the generator waits when needed (docs/spa-schedule.md)',
    MAX_STALENESS,
  ),
  ppoActorLr: rate(
    'PPO actor learning rate (SPA: 1e-6; 0 makes the update a no-op: a control arm)',
    MAX_LR,
    true,
  ),
  ppoCriticLr: rate('PPO critic learning rate (SPA: 1e-5)', MAX_LR, true),
  ppoMicroBatchSize: {
    ...count(
      'PPO: sequences per forward pass; memory and speed only, the update is the same (SPA: 1)',
      MAX_BATCH_ROWS,
    ),
    was: 'ppo-micro-batch',
  },
  ppoEpochs: count("PPO: passes over each step's episodes (SPA: 1)", MAX_EPOCHS),
  ppoMiniBatchSize: {
    ...count('PPO: episodes per optimizer step (SPA: 64, one step per update)', MAX_BATCH_ROWS),
    was: 'ppo-mini-batch',
  },
  ppoMask: choice(
    ['generated', 'response-only', 'all-after-system'],
    "PPO loss mask: the tokens the policy sampled (the paper), whole assistant turns (RAGEN) or every token after the system message (SPA's run)",
  ),
  ppoLossAgg: choice(
    ['token-mean', 'seq-mean-token-mean'],
    "PPO loss aggregation: a mean over the mini-batch's trained tokens (SPA's loss_agg_mode) or the mean of per-sequence token means (what SPA's released run computes)",
  ),
  ppoKlLossCoef: {
    ...rate(
      'PPO: coefficient of the KL-to-start-model loss (SPA: 0, off; docs/spa-ppo.md#kl)',
      MAX_LOSS_WEIGHT,
      true,
    ),
    was: 'ppo-kl-coef',
  },
  ppoAdvEstimator: choice(
    ['gae', 'grpo', 'grpo-mean'],
    "PPO advantages: GAE with a critic (SPA), or each episode's score against its group's mean and std (grpo) or mean only (grpo-mean, Dr. GRPO), no critic (docs/spa-ppo.md#grpo)",
  ),
  evalPuzzles: count(
    `validation puzzles (SPA: 128); puzzles × k × passes at most ${MAX_EVAL_EPISODES}`,
    MAX_GROUPS,
  ),
  evalK: count('samples per validation puzzle, the k of Pass@k (SPA: 8)', MAX_GROUP_SIZE),
  evalPasses: count('passes over the validation puzzles, averaged (SPA: 2; --full: 2)', MAX_PASSES),
  evalSftPolicy: { flag: 'eval-sft', help: 'also evaluate the SFT policy (v1), not only the final one' },
  evalCurve: { help: 'evaluate every exported policy version (a learning curve), not only the final one' },
  evalEvery: countFromZero(
    'with --eval-curve: evaluate only the policies of every n-th PPO step, the first and the final (0: every export)',
    MAX_BATCHES,
  ),
  maxNewTokens: count('tokens per assistant turn of the ONNX policy (SPA: 400)', MAX_TOKENS),
  stopAtAnswer: { help: 'also end an ONNX turn at </answer> (SPA generates to eos or the token budget)' },
  contextWindow: countFromZero(
    'tokens the ONNX policy attends to; longer prompts lose their left part as in the SFT window (0: all, SPA; default: the SFT window for a tiny model, 0 for a real one)',
    MAX_TOKENS,
  ),
  model: {
    help: `a tiny model built here (${TINY_MODELS.join(', ')}; default ${loopConfig('_2_sokoban').model}) or a local Hugging Face causal-LM folder`,
    arg: '<name|folder>',
    parse: () => (text) => text,
  },
  device: choice(['cpu', 'cuda'], 'where ONNX generation and the trainer run'),
  trainerProcs: count(
    'SFT and PPO train data-parallel on n torchrun ranks (one GPU each with --device cuda), the batches unchanged',
    MAX_PROCESSES,
  ),
  reportTo: {
    help: "where the trainers' curves and the evaluations go (TRL's report_to): tensorboard (<run>/tensorboard, `spa board`), wandb (offline unless WANDB_MODE is set), both (tensorboard,wandb) or none",
    arg: '<list>',
    parse: (flag) => (text) => {
      const targets = listOf(flag, REPORT_TARGETS)(text);
      if (targets.includes('none') && targets.length > 1)
        throw new InvalidArgumentError(`${flag} ${text}: none means no destination; give it alone`);
      return targets;
    },
  },
};

/** `sftGroups` → `sft-groups`. */
const kebab = (key: string) => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/**
 * A field's long option without its dashes (`sft-groups`, `eval-sft`), as a config file names it
 * too; `config` for the name and env, which `--config` sets.
 */
export function loopFieldFlag(field: keyof LoopConfig): string {
  return field === 'name' || field === 'env' ? 'config' : (LOOP_FIELDS[field].flag ?? kebab(field));
}

/** Each field with its commander option (no default: an absent option keeps the config's value), and its earlier name's. */
function fieldOptions(): [keyof LoopFieldTable, Option, Option | undefined][] {
  return (Object.entries(LOOP_FIELDS) as [keyof LoopFieldTable, ValueField<unknown> | ToggleField][]).map(
    ([key, field]) => {
      const flag = `--${field.flag ?? kebab(key)}`;
      if (!('parse' in field)) return [key, new Option(flag, field.help), undefined];
      const option = new Option(`${flag} ${field.arg}`, field.help).argParser(field.parse(flag));
      return [key, option, field.was === undefined ? undefined : renamed(`--${field.was}`, flag, field)];
    },
  );
}

/** The hidden option of a field's earlier name: it parses as the field does (its range in the help). */
function renamed(was: string, flag: string, field: ValueField<unknown>): Option {
  return new Option(`${was} ${field.arg}`, `renamed ${flag}`).hideHelp().argParser(field.parse(was));
}

/** Adds one option per `LoopConfig` field to `command` (and a hidden one per earlier name). */
export function addLoopFieldOptions(command: Command): Command {
  for (const [, option, was] of fieldOptions()) {
    command.addOption(option);
    if (was) command.addOption(was);
  }
  return command;
}

/**
 * The fields given on the command line or in the config file, from commander's parsed options; a
 * field given by its earlier name gets a notice on stderr naming the new one.
 */
export function loopFieldValues(options: Readonly<Record<string, unknown>>): Partial<LoopConfig> {
  const given = fieldOptions().map(([key, option, was]) => {
    const old = was ? options[was.attributeName()] : undefined;
    if (was && old !== undefined)
      process.stderr.write(
        `[spa] ${was.long ?? ''} is deprecated: it is ${option.long ?? ''} now (also in a config file)\n`,
      );
    return [key, options[option.attributeName()] ?? old] as const;
  });
  return Object.fromEntries(given.filter(([, value]) => value !== undefined)) as Partial<LoopConfig>;
}
