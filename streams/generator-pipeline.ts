import { map, merge, share, type Observable } from 'rxjs';
import type { Annotation } from '../operators/annotate-ground-truth.js';
import { SPA_MALFORMED_FILTER, type MalformedFilter } from '../operators/filter-malformed.js';
import { toRollout } from '../operators/to-rollout.js';
import { toTrajectory } from '../operators/to-trajectory.js';
import type { Outbound } from '../schemas/outbound.js';
import type { DemandGate } from './demand-gate.js';
import type { EpisodeConfig } from './episodes/episode-config.js';
import { episodes, type EnvFactory } from './episodes/episodes.js';
import { meteredPolicySource } from './policies/metered-policy.js';
import type { PolicySource } from './policies/policy.js';
import { toSftOutputs } from './sft-outputs.js';
import { meterOutbound } from './telemetry/meter-outbound.js';
import { traceEpisodes } from './telemetry/trace-episodes.js';
import { traceStage } from './telemetry/trace-stage.js';

export interface GeneratorOptions {
  /** `sft`: world-model SFT rows (data generation); `rollouts`: PPO episodes. */
  readonly target: 'sft' | 'rollouts';
  readonly annotation?: Annotation;
  readonly maskTransitions?: boolean;
  /** Which rows are judged and how; default SPA's (docs/spa-data.md#filter). */
  readonly malformedFilter?: MalformedFilter;
  readonly now?: () => number;
  /** Backpressure from the sink: the episode loop waits while it is behind. */
  readonly gate?: DemandGate;
}

/**
 * The whole generator side in one place, as one `pipe()` so the stages read in order:
 *
 *   episodes ─► toTrajectory ─┬─► spa.trajectories            (every raw trajectory)
 *                             ├─► toSftOutputs: annotate ─► filter per row ─┬─► spa.sft
 *                             │                                              └─► spa.dlq (with reason)
 *                             └─► toRollout ─► spa.rollouts   (PPO target instead of SFT)
 *
 * The trajectory stream is shared, so each episode is played once and fans out. Telemetry
 * (streams/telemetry; a pass-through while off): an episode span per trajectory, stage timing
 * around each operator, spa_* counters on the merged output.
 */
export function generatorPipeline(
  config: EpisodeConfig,
  makeEnv: EnvFactory,
  policy: PolicySource,
  options: GeneratorOptions,
): Observable<Outbound> {
  const now = options.now ?? Date.now;
  const trajectories = episodes(config, makeEnv, meteredPolicySource(policy), options.gate).pipe(
    traceEpisodes(),
    traceStage('toTrajectory', toTrajectory(now)),
    share(),
  );
  const raw = trajectories.pipe(
    map((t): Outbound => ({ topic: 'trajectories', key: t.trajectory_id, record: t })),
  );
  if (options.target === 'rollouts') {
    return merge(
      raw,
      trajectories.pipe(
        traceStage('toRollout', toRollout()),
        map((r): Outbound => ({ topic: 'rollouts', key: r.group_id, record: r })),
      ),
    ).pipe(meterOutbound());
  }
  const sft = trajectories.pipe(
    toSftOutputs(
      {
        annotation: options.annotation ?? 'gt',
        maskTransitions: options.maskTransitions ?? false,
        malformedFilter: options.malformedFilter ?? SPA_MALFORMED_FILTER,
      },
      now,
    ),
  );
  return merge(raw, sft).pipe(meterOutbound());
}
