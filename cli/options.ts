import { InvalidArgumentError, type Command } from 'commander';
import { ENV_NAMES, parseEnvName } from '../envs/registry.js';
import type { EnvName } from '../envs/types.js';
import { SPA_MALFORMED_FILTER, type MalformedFilter } from '../operators/filter-malformed.js';
import { parseShard, type Shard } from '../streams/episodes/shard.js';

/** A commander parser for positive integers whose error names the option. */
export function positiveInt(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1)
      throw new InvalidArgumentError(`${name} must be a positive integer, got "${value}"`);
    return n;
  };
}

/** A commander parser for non-negative integers whose error names the option. */
export function nonNegativeInt(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0)
      throw new InvalidArgumentError(`${name} must be an integer ≥ 0, got "${value}"`);
    return n;
  };
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
    try {
      return parseShard(value, name);
    } catch (error) {
      throw new InvalidArgumentError((error as Error).message);
    }
  };
}

/** A commander parser for a probability in [0, 1] whose error names the option. */
export function probability(name: string): (value: string) => number {
  return (value) => {
    const p = Number(value);
    if (value.trim() === '' || !(p >= 0 && p <= 1))
      throw new InvalidArgumentError(`${name} must be a probability between 0 and 1, got "${value}"`);
    return p;
  };
}

/** A commander parser for a finite number > 0 (a learning rate) whose error names the option. */
export function positiveNumber(name: string): (value: string) => number {
  return (value) => {
    const x = Number(value);
    if (value.trim() === '' || !Number.isFinite(x) || x <= 0)
      throw new InvalidArgumentError(`${name} must be a number > 0, got "${value}"`);
    return x;
  };
}

/** A commander parser for a finite number ≥ 0 whose error names the option. */
export function nonNegativeNumber(name: string): (value: string) => number {
  return (value) => {
    const x = Number(value);
    if (value.trim() === '' || !Number.isFinite(x) || x < 0)
      throw new InvalidArgumentError(`${name} must be a number ≥ 0, got "${value}"`);
    return x;
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

/** A commander parser for an integer in [min, max] whose error names the option. */
export function intInRange(min: number, max: number): (name: string) => (value: string) => number {
  return (name) => (value) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < min || n > max)
      throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}, got "${value}"`);
    return n;
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
      positiveInt('--max-new-tokens'),
    )
    .option('--stop-at-answer', 'ONNX policies: also end a turn at </answer> (SPA generates to eos)', false)
    .option(
      '--context-window <n>',
      'ONNX policies: tokens the model attends to; longer prompts lose their left part, as in an SFT window (default: all)',
      positiveInt('--context-window'),
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
