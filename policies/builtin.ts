import type { PromptMode } from '../envs/protocol/index.js';
import { oraclePolicy } from './oracle-policy.js';
import type { Policy } from './policy.js';
import { randomPolicy } from './random-policy.js';

/** Policies that need no model: `random` (SPA's random generator) and `oracle` (a solver). */
export const BUILTIN_POLICIES = ['random', 'oracle'] as const;
export type BuiltinPolicyName = (typeof BUILTIN_POLICIES)[number];

/**
 * `actionsPerTurn` caps the oracle's plan per turn (default 5); `exploreRate` makes the oracle
 * take random actions, `states` 'empty' leaves its state tags empty (oracle-policy.ts). The random policy ignores both.
 */
export function builtinPolicy(
  name: BuiltinPolicyName,
  options: {
    mode: PromptMode;
    seed?: number;
    actionsPerTurn?: number;
    exploreRate?: number;
    states?: 'true' | 'empty';
  },
): Policy {
  return name === 'random' ? randomPolicy(options) : oraclePolicy(options);
}
