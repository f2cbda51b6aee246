import type { EnvName } from '../../envs/types.js';
import type { PromptMode } from '../../envs/protocol/index.js';
import { SPA_VARIANT, actionBudget, type PuzzleSource } from '../../envs/registry.js';
import { UNSHARDED, type Shard } from './shard.js';

/**
 * Everything the env × policy loop needs to know; defaults are SPA's (docs/spa-envs.md#manager,
 * docs/spa-ppo.md#hyperparameters).
 */
export interface EpisodeConfig {
  readonly runId: string;
  readonly env: EnvName;
  readonly variant: string;
  readonly split: 'train' | 'val';
  readonly mode: PromptMode;
  readonly puzzles: PuzzleSource;
  readonly groups: number;
  readonly groupSize: number;
  /** Rollout batches; each batch plays `groups × groupSize` slots. */
  readonly batches: number;
  /** First seed: SPA uses 10000 for train and 123 for val. */
  readonly seedBase: number;
  readonly maxTurns: number;
  readonly maxActionsPerTurn: number;
  readonly maxActionsPerTraj: number;
  readonly formatPenalty: number;
  /** Only printed in the prompt ("Max response length: N words"). */
  readonly maxTokens: number;
  /** Reproduce SPA's string-fallback parser bug (docs/spa-protocol.md#world-model); off by default. */
  readonly reproduceSpaFallbackBug: boolean;
  /** Which of the run's groups this generator plays (shard.ts); default all of them. */
  readonly shard: Shard;
}

/** Fill SPA's defaults around the few fields a caller usually sets. */
export function episodeConfig(partial: Partial<EpisodeConfig> & Pick<EpisodeConfig, 'env'>): EpisodeConfig {
  const split = partial.split ?? 'train';
  const variant = partial.variant ?? SPA_VARIANT[partial.env];
  const config: EpisodeConfig = {
    runId: partial.runId ?? 'run',
    variant,
    split,
    mode: partial.mode ?? 'wm',
    puzzles: partial.puzzles ?? 'generated',
    groups: partial.groups ?? 4,
    groupSize: partial.groupSize ?? 2,
    batches: partial.batches ?? 1,
    seedBase: partial.seedBase ?? (split === 'train' ? 10000 : 123),
    maxTurns: partial.maxTurns ?? 5,
    maxActionsPerTurn: partial.maxActionsPerTurn ?? 5,
    maxActionsPerTraj: partial.maxActionsPerTraj ?? actionBudget(partial.env, variant),
    formatPenalty: partial.formatPenalty ?? -0.1,
    maxTokens: partial.maxTokens ?? 100,
    reproduceSpaFallbackBug: partial.reproduceSpaFallbackBug ?? false,
    shard: partial.shard ?? UNSHARDED,
    env: partial.env,
  };
  for (const field of [
    'groups',
    'groupSize',
    'batches',
    'maxTurns',
    'maxActionsPerTurn',
    'maxActionsPerTraj',
  ] as const) {
    const value = config[field];
    if (!Number.isInteger(value) || value < 1) {
      throw new Error(`episode config: "${field}" must be a positive integer, got ${String(value)}`);
    }
  }
  return config;
}

/**
 * The puzzle seed of group `group` in batch `batch` (docs/spa-envs.md#manager): train seeds
 * advance by `groups` each batch (a reset), val restarts at its base every batch.
 */
export function seedOf(
  config: Pick<EpisodeConfig, 'split' | 'seedBase' | 'groups'>,
  batch: number,
  group: number,
): number {
  return (config.split === 'train' ? config.seedBase + batch * config.groups : config.seedBase) + group;
}

/** The highest puzzle seed `config` plays (a seed is an Avro `int` in the records). */
export function lastSeed(config: Pick<EpisodeConfig, 'split' | 'seedBase' | 'groups' | 'batches'>): number {
  return seedOf(config, config.batches - 1, config.groups - 1);
}
