import { CommanderError, InvalidArgumentError, type Command } from 'commander';
import { ENV_NAMES, parseEnvName } from '../envs/registry.js';
import type { EnvName } from '../envs/types.js';
import { SPA_MALFORMED_FILTER, type MalformedFilter } from '../operators/filter-malformed.js';
import { lastSeed, type EpisodeConfig } from '../streams/episodes/episode-config.js';
import { parseShard, type Shard } from '../streams/episodes/shard.js';
import {
  resolveTelemetryOptions,
  TelemetrySettingError,
  type TelemetryOptions,
} from '../streams/telemetry/telemetry.js';

/**
 * The exit code of a usage error: a flag or config field out of its range, an output path that
 * cannot be written, flags that do not go together. Other failures exit 1 (cli/main.ts).
 */
export const USAGE_EXIT_CODE = 2;

/** A usage error found in a command's action, before any work: `spa: <message>`, exit 2 (cli/main.ts). */
export class UsageError extends CommanderError {
  constructor(message: string) {
    super(USAGE_EXIT_CODE, 'spa.usage', message);
    this.name = 'UsageError';
  }
}

/**
 * Checks telemetry's flags and variables (`--otlp-endpoint`, `OTEL_*`) before any work: a bad
 * one is a usage error (exit 2), as a bad flag is.
 */
export function checkTelemetry(options: TelemetryOptions): TelemetryOptions {
  try {
    resolveTelemetryOptions(options);
  } catch (error) {
    throw error instanceof TelemetrySettingError ? new UsageError(error.message) : error;
  }
  return options;
}

// The ranges of the numeric options. Each is checked when the flag or config field is read; the
// limits that follow from several flags together are in checkEpisodeLimits and checkEvalLimits.

/** Seeds (puzzle, policy, shuffle) are Avro `int`s (Trajectory.seed) and the RNG reads 32 bits. */
export const MAX_SEED = 2 ** 31 - 1;
/** TCP ports; 0 asks the OS for a free one. */
const MAX_PORT = 65_535;
/** Puzzles (groups) per batch. */
export const MAX_GROUPS = 100_000;
/** Episodes per puzzle: a group's members, the k of Pass@k. */
export const MAX_GROUP_SIZE = 1_000;
/** Batches of a generator run, PPO steps, steps between exports. */
export const MAX_BATCHES = 100_000;
/** Episodes of one batch: they are played side by side, each env and history in memory. */
export const MAX_BATCH_EPISODES = 100_000;
/** Episodes of an evaluation: every trajectory is kept for the report (about 20 kB each). */
export const MAX_EVAL_EPISODES = 50_000;
/** Passes over the same evaluation puzzles. */
export const MAX_PASSES = 100;
/** Training epochs (SFT, warm-up, PPO's passes over a step). */
export const MAX_EPOCHS = 1_000;
/** Rows or sequences per optimizer step or forward pass. */
export const MAX_BATCH_ROWS = 65_536;
/** Tokens of a window or a generation budget. */
export const MAX_TOKENS = 131_072;
/** Processes of one kind (generators, trainer ranks, shards). */
export const MAX_PROCESSES = 256;
/** Policy versions a record may lag behind. */
export const MAX_STALENESS = 1_000;
/** Actions a turn names: SPA's max_actions_per_turn is 5, more are cut (docs/spa-envs.md#manager). */
export const MAX_ACTIONS_PER_TURN = 5;
/** Learning rates. */
export const MAX_LR = 1;
/** Loss weights and coefficients. */
export const MAX_LOSS_WEIGHT = 1_000;
/** Trajectories per replay transaction: a transaction's records are held until it commits. */
export const MAX_TRANSACTION_TRAJECTORIES = 100_000;
/** Records a tap prints. */
export const MAX_RECORDS = 1_000_000_000;

/** A commander parser; {@link describeRanges} finds the range it accepts for the help text. */
type Parser<T> = (value: string) => T;

const RANGES = new WeakMap<Parser<unknown>, string>();

/** `parse`, remembered as accepting `range` (e.g. `1..100000`). */
function ranged<T>(parse: Parser<T>, range: string): Parser<T> {
  RANGES.set(parse, range);
  return parse;
}

/**
 * Appends each numeric option's range to its help text (`(1..100000)`), for `command` and its
 * subcommands, so `--help` states the range the parser checks.
 */
export function describeRanges(command: Command): void {
  for (const option of command.options) {
    const range = option.parseArg && RANGES.get(option.parseArg as Parser<unknown>);
    if (range && !option.description.includes(range)) option.description += ` (${range})`;
  }
  for (const subcommand of command.commands) describeRanges(subcommand);
}

/** A commander parser for an integer in [min, max] whose error names the option and the range. */
function intInRange(min: number, max: number): (name: string) => Parser<number> {
  return (name) =>
    ranged((value) => {
      const n = Number(value);
      if (value.trim() === '' || !Number.isInteger(n) || n < min || n > max)
        throw new InvalidArgumentError(`${name} must be an integer in ${min}..${max}, got "${value}"`);
      return n;
    }, `${min}..${max}`);
}

/** A commander parser for an integer in 1..max whose error names the option. */
export function positiveInt(name: string, max: number): Parser<number> {
  return intInRange(1, max)(name);
}

/** A commander parser for an integer in 0..max whose error names the option. */
export function nonNegativeInt(name: string, max: number): Parser<number> {
  return intInRange(0, max)(name);
}

/** A commander parser for a seed, 0..{@link MAX_SEED}. */
export function seedNumber(name: string): Parser<number> {
  return intInRange(0, MAX_SEED)(name);
}

/** A commander parser for a TCP port, 0..65535 (0: any free port). */
export function port(name: string): Parser<number> {
  return intInRange(0, MAX_PORT)(name);
}

/**
 * A commander parser for a finite number between `min` and `max`, each bound included unless
 * `above` / `below` says it is excluded; the error names the option and the range.
 */
export function numberInRange(
  name: string,
  { min, max, above = false, below = false }: { min: number; max: number; above?: boolean; below?: boolean },
): Parser<number> {
  const range = `${min} ${above ? '<' : '≤'} x ${below ? '<' : '≤'} ${max}`;
  return ranged((value) => {
    const x = Number(value);
    const inside = (above ? x > min : x >= min) && (below ? x < max : x <= max);
    if (value.trim() === '' || !Number.isFinite(x) || !inside)
      throw new InvalidArgumentError(`${name} must be a number with ${range}, got "${value}"`);
    return x;
  }, range);
}

/** A commander parser for a number > 0 and ≤ max (a learning rate, a weight). */
export function positiveNumber(name: string, max: number): Parser<number> {
  return numberInRange(name, { min: 0, max, above: true });
}

/** A commander parser for a number from 0 to max. */
export function nonNegativeNumber(name: string, max: number): Parser<number> {
  return numberInRange(name, { min: 0, max });
}

/** A commander parser for a probability in [0, 1] whose error names the option. */
export function probability(name: string): Parser<number> {
  return ranged((value) => {
    const p = Number(value);
    if (value.trim() === '' || !(p >= 0 && p <= 1))
      throw new InvalidArgumentError(`${name} must be a probability between 0 and 1, got "${value}"`);
    return p;
  }, '0 ≤ p ≤ 1');
}

/** A commander parser for one of a fixed set of words. */
export function oneOf<T extends string>(name: string, choices: readonly T[]): (value: string) => T {
  return (value) => {
    if ((choices as readonly string[]).includes(value)) return value as T;
    throw new InvalidArgumentError(`${name} must be one of ${choices.join(', ')}, got "${value}"`);
  };
}

/** A commander parser for `i/n` (shard i of n, 0-based) whose error names the option. */
export function shardOf(name: string): (value: string) => Shard {
  return (value) => {
    let shard: Shard;
    try {
      shard = parseShard(value, name);
    } catch (error) {
      throw new InvalidArgumentError((error as Error).message);
    }
    if (shard.count > MAX_PROCESSES)
      throw new InvalidArgumentError(
        `${name} i/n: n (generator processes) must be at most ${MAX_PROCESSES}, got "${value}"`,
      );
    return shard;
  };
}

/** A commander parser for a comma-separated list of env names, or `none` for the empty list. */
export function envList(name: string): (value: string) => EnvName[] {
  return (value) => {
    if (value.trim() === 'none') return [];
    try {
      return [...new Set(value.split(',').map((part) => parseEnvName(part.trim())))];
    } catch (error) {
      throw new InvalidArgumentError(
        `${name} must be "none" or a comma-separated list of ${ENV_NAMES.join(', ')}: ${(error as Error).message}`,
      );
    }
  };
}

/** A commander parser for a non-empty comma-separated list of `choices` (`wm,base`) whose error names the option. */
export function listOf<T extends string>(name: string, choices: readonly T[]): (value: string) => T[] {
  return (value) => {
    const parts = [...new Set(value.split(',').map((part) => part.trim()))];
    const bad = parts.filter((part) => !(choices as readonly string[]).includes(part));
    if (parts.length === 0 || bad.length > 0)
      throw new InvalidArgumentError(
        `${name} must be a comma-separated list of ${choices.join(', ')}, got "${value}"`,
      );
    return parts as T[];
  };
}

/**
 * `--max-new-tokens`, `--stop-at-answer` and `--context-window`: how an ONNX policy ends a turn
 * (docs/spa-generation.md#stop) and how much of the prompt it sees (docs/spa-generation.md#window).
 */
export function addGenerationOptions(command: Command): Command {
  return command
    .option(
      '--max-new-tokens <n>',
      'ONNX policies: tokens per assistant turn (SPA: 400)',
      positiveInt('--max-new-tokens', MAX_TOKENS),
    )
    .option('--stop-at-answer', 'ONNX policies: also end a turn at </answer> (SPA generates to eos)', false)
    .option(
      '--context-window <n>',
      'ONNX policies: tokens the model attends to; longer prompts lose their left part, as in an SFT window (default: all)',
      positiveInt('--context-window', MAX_TOKENS),
    );
}

/** `--filter-envs` and `--filter-parser-reasons`: which SFT rows the malformed filter judges (docs/spa-data.md#filter). */
export function addMalformedFilterOptions(command: Command): Command {
  return command
    .option(
      '--filter-envs <envs>',
      "envs whose SFT rows must pass SPA's structural filter (is_good_response), or none",
      envList('--filter-envs'),
      [...SPA_MALFORMED_FILTER.envs],
    )
    .option(
      '--filter-parser-reasons',
      'also reject rows whose turn the parser refused (answer-only, empty-answer, unknown-action; not in SPA)',
      false,
    );
}

/** The filter the options of {@link addMalformedFilterOptions} describe. */
export function malformedFilterOf(options: {
  filterEnvs: EnvName[];
  filterParserReasons: boolean;
}): MalformedFilter {
  return { envs: options.filterEnvs, parserReasons: options.filterParserReasons };
}

/** The flags (or config fields) that set an episode config's sizes, as errors name them. */
export interface EpisodeFlags {
  readonly groups: string;
  readonly groupSize: string;
  readonly batches: string;
  /** The flag of the first seed; absent when the command fixes it. */
  readonly seedBase?: string;
}

/**
 * The limits of `config` that follow from several flags together: a batch's episodes (groups ×
 * group size, played side by side) and its puzzle seeds, which must stay Avro `int`s to the last
 * one (streams/episodes/episode-config.ts#seedOf). Checked before any work, for every output.
 */
export function checkEpisodeLimits(config: EpisodeConfig, flags: EpisodeFlags): void {
  const episodes = config.groups * config.groupSize;
  if (episodes > MAX_BATCH_EPISODES)
    throw new UsageError(
      `${flags.groups} × ${flags.groupSize} (the episodes of a batch, played side by side) must be at most ${MAX_BATCH_EPISODES}, got ${config.groups} × ${config.groupSize} = ${episodes}`,
    );
  const last = lastSeed(config);
  if (last > MAX_SEED) {
    // train seeds advance by a batch's groups; val restarts at the first seed every batch
    const sizes = [`${flags.groups} ${config.groups}`];
    const knobs = [flags.seedBase, flags.groups];
    if (config.split === 'train') {
      sizes.push(`${flags.batches} ${config.batches}`);
      knobs.push(flags.batches);
    }
    const first = flags.seedBase ? `${flags.seedBase} ${config.seedBase}` : `first seed ${config.seedBase}`;
    throw new UsageError(
      `puzzle seeds must stay in 0..${MAX_SEED} (an Avro int), but ${first} with ${sizes.join(' × ')} reaches ${last}; lower ${alternatives(knobs.filter((k) => k !== undefined))}`,
    );
  }
}

/**
 * The limit of an evaluation that follows from its flags together: puzzles × k × passes
 * episodes, every trajectory kept for the report.
 */
export function checkEvalLimits(
  sizes: { readonly puzzles: number; readonly k: number; readonly passes: number },
  flags: { readonly puzzles: string; readonly k: string; readonly passes: string },
): void {
  const episodes = sizes.puzzles * sizes.k * sizes.passes;
  if (episodes > MAX_EVAL_EPISODES)
    throw new UsageError(
      `${flags.puzzles} × ${flags.k} × ${flags.passes} (the episodes of an evaluation, each kept for the report) must be at most ${MAX_EVAL_EPISODES}, got ${sizes.puzzles} × ${sizes.k} × ${sizes.passes} = ${episodes}`,
    );
}

/** `a`, `a or b`, `a, b or c`. */
function alternatives(names: readonly string[]): string {
  return names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
}
