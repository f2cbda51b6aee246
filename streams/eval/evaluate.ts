import { lastValueFrom, tap, toArray } from 'rxjs';
import { envFactory, SPA_VARIANT, type PuzzleSource } from '../../envs/registry.js';
import type { EnvName } from '../../envs/types.js';
import { toTrajectory } from '../../operators/to-trajectory.js';
import type { Trajectory } from '../../schemas/index.js';
import { episodeConfig } from '../episodes/episode-config.js';
import { episodes } from '../episodes/episodes.js';
import { meteredPolicySource } from '../policies/metered-policy.js';
import type { PolicySource } from '../../policies/policy.js';
import { passReport, type PassReport } from './pass-at-k.js';

export interface EvaluationOptions {
  readonly env: EnvName;
  readonly variant?: string;
  /** Number of puzzles (groups); SPA validates on 128 (seeds 123..250). */
  readonly puzzles?: number;
  /** Episodes per puzzle = the k of Pass@k; SPA uses 8. */
  readonly k?: number;
  readonly source?: PuzzleSource;
  /** Independent passes over the same puzzles, averaged (SPA: 2). Default 1. */
  readonly passes?: number;
  readonly runId?: string;
  /** Called once per finished episode (progress). */
  readonly onEpisode?: () => void;
}

export interface EvaluationResult extends PassReport {
  readonly env: EnvName;
  readonly policy: string;
  readonly policyVersion: number;
}

/**
 * SPA's validation (docs/spa-generation.md#eval): `puzzles` groups × `k` episodes in base mode on
 * the val seeds (the paper's own puzzles by default), `passes` times with the policy's sampling
 * going on between passes; Pass@1 and Pass@k averaged over passes, with standard errors.
 */
export async function evaluatePolicy(
  policy: PolicySource,
  options: EvaluationOptions,
): Promise<EvaluationResult> {
  const source =
    options.source ??
    (options.variant === undefined || options.variant === SPA_VARIANT[options.env] ? 'spa' : 'generated');
  const passes = options.passes ?? 1;
  if (!Number.isInteger(passes) || passes < 1)
    throw new RangeError(`passes ${passes}: expected an integer ≥ 1`);
  const trajectories: Trajectory[] = [];
  for (let pass = 0; pass < passes; pass++) {
    const runId = options.runId ?? 'eval';
    const config = episodeConfig({
      env: options.env,
      variant: options.variant,
      split: 'val',
      mode: 'base',
      puzzles: source,
      groups: options.puzzles ?? 128,
      groupSize: options.k ?? 8,
      batches: 1,
      runId: passes === 1 ? runId : `${runId}-pass${pass}`,
    });
    trajectories.push(
      ...(await lastValueFrom(
        episodes(
          config,
          envFactory({ name: options.env, variant: config.variant, puzzles: source }),
          meteredPolicySource(policy),
          { trajectoryStreams: false }, // each pass continues the policy's sampling
        ).pipe(
          toTrajectory(),
          tap(() => options.onEpisode?.()),
          toArray(),
        ),
      )),
    );
  }
  const byGroup = new Map<string, { puzzle: string; successes: boolean[] }>();
  for (const t of trajectories) {
    const group = byGroup.get(t.group_id) ?? { puzzle: String(t.seed), successes: [] };
    group.successes.push(t.success);
    byGroup.set(t.group_id, group);
  }
  const first = trajectories[0]!;
  return {
    env: options.env,
    policy: first.policy,
    policyVersion: first.policy_version,
    ...passReport([...byGroup].map(([groupId, group]) => ({ groupId, ...group }))),
  };
}
