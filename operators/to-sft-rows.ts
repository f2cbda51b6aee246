import { mergeMap, type OperatorFunction } from 'rxjs';
import type { SftRow } from '../schemas/index.js';
import type { AnnotatedTrajectory } from './annotate-ground-truth.js';

/** SPA's constant `reward_model` column, kept verbatim (reference §6 step 5). */
export const SPA_REWARD_MODEL = "{'ground_truth': {'numbers': array([0, 0]), 'target': 0}, 'style': 'rule'}";

/**
 * One SftRow per assistant turn (reference §6 step 5): prompt = messages before the turn
 * (earlier assistant turns already annotated), response = the annotated turn. Unlike SPA,
 * `data_source` is the real env name, not a hard-coded "sokoban" (reference §12 item 13).
 */
export function toSftRows(
  options: { maskTransitions?: boolean } = {},
): OperatorFunction<AnnotatedTrajectory, SftRow> {
  const maskTransitions = options.maskTransitions ?? false;
  return mergeMap((trajectory) => {
    const rows: SftRow[] = [];
    trajectory.messages.forEach((message, i) => {
      if (message.role !== 'assistant') return;
      rows.push({
        data_source: trajectory.env,
        prompt: trajectory.messages.slice(0, i),
        response: message.content,
        ability: 'bfs',
        reward_model: SPA_REWARD_MODEL,
        extra_info: `{'index': ${trajectory.seed}, 'split': '${trajectory.split}'}`,
        trajectory_id: trajectory.trajectory_id,
        turn: rows.length,
        env: trajectory.env,
        policy_version: trajectory.policy_version,
        annotation: trajectory.annotation,
        mask_transitions: maskTransitions,
      });
    });
    return rows;
  });
}
