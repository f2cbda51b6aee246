import { map, type OperatorFunction } from 'rxjs';
import { annotateGroundTruth, type Annotation } from '../operators/annotate-ground-truth.js';
import {
  filterMalformedRows,
  SPA_MALFORMED_FILTER,
  type MalformedFilter,
} from '../operators/filter-malformed.js';
import type { Rejection } from '../operators/verdict.js';
import type { Rejected, Trajectory } from '../schemas/index.js';
import type { Outbound } from '../schemas/outbound.js';
import { tracedStages } from './telemetry/trace-stage.js';

/** How raw trajectories become SFT rows: annotation, row flags and the malformed filter. */
export interface SftDataOptions {
  /** Default `gt`: ground-truth states (docs/spa-data.md#ablations for the others). */
  readonly annotation?: Annotation;
  /** Default false. */
  readonly maskTransitions?: boolean;
  /** Which rows are judged and how; default SPA's (docs/spa-data.md#filter). */
  readonly malformedFilter?: MalformedFilter;
}

const stage = tracedStages({ annotateGroundTruth, filterMalformed: filterMalformedRows });

/**
 * The SFT branch, shared by the generator and replay (docs/spa-data.md):
 *
 *   trajectory ─► annotateGroundTruth ─► filterMalformedRows ─┬─► spa.sft (one row per good turn)
 *                                                             └─► spa.dlq (each rejected row, with reason)
 */
export function toSftOutputs(
  options: SftDataOptions,
  now: () => number,
): OperatorFunction<Trajectory, Outbound> {
  const { annotation = 'gt', maskTransitions = false, malformedFilter = SPA_MALFORMED_FILTER } = options;
  return (trajectories) =>
    trajectories.pipe(
      stage.annotateGroundTruth({ annotation }),
      stage.filterMalformed(malformedFilter, { maskTransitions }),
      map((verdict): Outbound =>
        verdict.accepted
          ? { topic: 'sft', key: verdict.value.trajectory_id, record: verdict.value }
          : { topic: 'dlq', key: verdict.rejection.key, record: toRejected(verdict.rejection, now()) },
      ),
    );
}

/** A rejection as a dead-letter record; the payload is the rejected value (row or trajectory) as JSON. */
export function toRejected(rejection: Rejection<unknown>, createdAt: number): Rejected {
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
