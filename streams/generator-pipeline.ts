import { filter, map, merge, share, type Observable } from 'rxjs';
import { annotateGroundTruth, type Annotation } from '../operators/annotate-ground-truth.js';
import { filterMalformed } from '../operators/filter-malformed.js';
import { meterOutbound } from '../operators/meter-outbound.js';
import { toRollout } from '../operators/to-rollout.js';
import { toSftRows } from '../operators/to-sft-rows.js';
import { toTrajectory } from '../operators/to-trajectory.js';
import { traceEpisodes } from '../operators/trace-episodes.js';
import { traceStage } from '../operators/trace-stage.js';
import { isAccepted, isRejected, type Rejection } from '../operators/verdict.js';
import type { Rejected, Trajectory } from '../schemas/index.js';
import type { DemandGate } from './demand-gate.js';
import type { EpisodeConfig } from './episodes/episode-config.js';
import { episodes, type EnvFactory, type PolicySource } from './episodes/episodes.js';
import type { Outbound } from './outbound.js';

export interface GeneratorOptions {
  /** `sft`: world-model SFT rows (data generation); `rollouts`: PPO episodes. */
  readonly target: 'sft' | 'rollouts';
  readonly annotation?: Annotation;
  readonly maskTransitions?: boolean;
  readonly now?: () => number;
  /** Backpressure from the sink: the episode loop waits while it is behind. */
  readonly gate?: DemandGate;
}

/**
 * The whole generator side in one place (design.md, Data flow):
 *
 *   episodes ─► toTrajectory ─┬─► spa.trajectories            (every raw trajectory)
 *                             ├─► annotateGroundTruth ─► filterMalformed ─┬─► toSftRows ─► spa.sft
 *                             │                                           └─► spa.dlq (with reason)
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
  const trajectories = episodes(config, makeEnv, policy, options.gate).pipe(
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
  const verdicts = trajectories.pipe(
    traceStage('annotateGroundTruth', annotateGroundTruth({ annotation: options.annotation ?? 'gt' })),
    traceStage('filterMalformed', filterMalformed()),
    share(),
  );
  const rows = verdicts.pipe(
    filter(isAccepted),
    map((v) => v.value),
    traceStage('toSftRows', toSftRows({ maskTransitions: options.maskTransitions ?? false })),
    map((row): Outbound => ({ topic: 'sft', key: row.trajectory_id, record: row })),
  );
  const rejects = verdicts.pipe(
    filter(isRejected),
    map((v): Outbound => ({ topic: 'dlq', key: v.rejection.key, record: toRejected(v.rejection, now()) })),
  );
  return merge(raw, rows, rejects).pipe(meterOutbound());
}

/** A filter rejection as a dead-letter record; the payload is the trajectory as JSON. */
export function toRejected(rejection: Rejection<Trajectory>, createdAt: number): Rejected {
  return {
    key: rejection.key,
    source: rejection.source,
    reason: rejection.reason,
    detail: rejection.detail,
    payload: Buffer.from(JSON.stringify(rejection.value), 'utf8'),
    payload_fingerprint: null,
    created_at: createdAt,
  };
}
