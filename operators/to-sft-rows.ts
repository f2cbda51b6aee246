import type { SftRow } from '../schemas/index.js';
import type { AnnotatedTrajectory } from './annotate-ground-truth.js';

/** SPA's constant `reward_model` column, kept verbatim (docs/spa-data.md#columns). */
export const SPA_REWARD_MODEL = "{'ground_truth': {'numbers': array([0, 0]), 'target': 0}, 'style': 'rule'}";

/** How rows are flagged for the trainer. */
export interface SftRowOptions {
  /** Ask the trainer to leave the current and next state out of the loss (masking ablation). */
  readonly maskTransitions: boolean;
}

/**
 * One SftRow per assistant turn (docs/spa-data.md#rows): prompt = messages before the turn
 * (earlier assistant turns already annotated), response = the annotated turn. Unlike SPA,
 * `data_source` is the real env name, not a hard-coded "sokoban".
 */
export function sftRowsOf(trajectory: AnnotatedTrajectory, options: SftRowOptions): SftRow[] {
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
      mask_transitions: options.maskTransitions,
    });
  });
  return rows;
}
