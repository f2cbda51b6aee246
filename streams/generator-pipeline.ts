import { map, merge, share, type Observable } from 'rxjs';
import { toRollout } from '../operators/to-rollout.js';
import { toTrajectory } from '../operators/to-trajectory.js';
import type { Outbound } from '../schemas/outbound.js';
import type { DemandGate } from './demand-gate.js';
import type { EpisodeConfig } from './episodes/episode-config.js';
import { episodes, type EnvFactory } from './episodes/episodes.js';
import { meteredPolicySource } from './policies/metered-policy.js';
import type { PolicySource } from '../policies/policy.js';
import { toSftOutputs, type SftDataOptions } from './sft-outputs.js';
import { meterOutbound } from './telemetry/meter-outbound.js';
import { traceEpisodes } from './telemetry/trace-episodes.js';
import { tracedStages } from './telemetry/trace-stage.js';

/** What the generator pipeline publishes besides the raw trajectories, and how. */
export interface PipelineOptions extends SftDataOptions {
  /** `sft`: world-model SFT rows (data generation); `rollouts`: PPO episodes. */
  readonly target: 'sft' | 'rollouts';
  readonly now?: () => number;
  /** Backpressure from the sink: the episode loop waits while it is behind. */
  readonly gate?: DemandGate;
  /** Trajectory ids an earlier attempt already committed: not played again (resume). */
  readonly skip?: ReadonlySet<string>;
}

/** The operators, each timed as a stage of its own name (streams/telemetry/trace-stage.ts). */
const stage = tracedStages({ toTrajectory, toRollout });

/**
 * The whole generator side in one place, read top to bottom:
 *
 *   episodes ─► toTrajectory ─┬─► spa.trajectories            (every raw trajectory)
 *                             ├─► toSftOutputs: annotate ─► filter per row ─┬─► spa.sft
 *                             │                                              └─► spa.dlq (with reason)
 *                             └─► toRollout ─► spa.rollouts   (PPO target instead of SFT)
 *
 * The trajectory stream is shared, so each episode is played once and fans out. Telemetry
 * (streams/telemetry; a pass-through while off): the policy is metered, an episode span per
 * trajectory, stage timing around each operator, spa_* counters on the merged output.
 */
export function generatorPipeline(
  config: EpisodeConfig,
  makeEnv: EnvFactory,
  policy: PolicySource,
  options: PipelineOptions,
): Observable<Outbound> {
  const now = options.now ?? Date.now;
  const trajectories = episodes(config, makeEnv, meteredPolicySource(policy), options).pipe(
    traceEpisodes(),
    stage.toTrajectory(now),
    share(),
  );
  const published: Observable<Outbound> =
    options.target === 'rollouts'
      ? trajectories.pipe(
          stage.toRollout(),
          map((r) => ({ topic: 'rollouts', key: r.group_id, record: r })),
        )
      : trajectories.pipe(toSftOutputs(options, now));
  const raw = trajectories.pipe(
    map((t): Outbound => ({ topic: 'trajectories', key: t.trajectory_id, record: t })),
  );
  return merge(raw, published).pipe(meterOutbound());
}
