import { mergeMap, type OperatorFunction } from 'rxjs';
import { isRejectReason, type RejectReason, type SftRow, type Turn } from '../schemas/index.js';
import type { AnnotatedTrajectory } from './annotate-ground-truth.js';
import { sftRowsOf, type SftRowOptions } from './to-sft-rows.js';
import type { Verdict } from './verdict.js';

/**
 * SPA's structural filter `is_good_response` (docs/spa-data.md#filter): a case-insensitive
 * `<think>…</think>` starting before `<answer>…</answer>`, and inside the think body at least
 * one observation and one prediction span, the first observation first.
 */
export function isWellFormedWorldModelResponse(response: string): boolean {
  const think = /<think>(.*?)<\/think>/is.exec(response);
  const answer = /<answer>(.*?)<\/answer>/is.exec(response);
  if (!think || !answer || think.index >= answer.index) return false;
  const body = think[1] ?? '';
  const observation = /<observation>.*?<\/observation>/is.exec(body);
  const prediction = /<prediction>.*?<\/prediction>/is.exec(body);
  return observation !== null && prediction !== null && observation.index < prediction.index;
}

/** Which rows the malformed filter judges, and by which rules (docs/spa-data.md#filter). */
export interface MalformedFilter {
  /** Envs whose rows must pass `is_good_response`; SPA filters FrozenLake and Sudoku, not Sokoban. */
  readonly envs: readonly string[];
  /**
   * Also reject a row whose turn the parser did not accept, with the parser's reason
   * (`answer-only`, `empty-answer`, `unknown-action`, `no-format-match`). Not a rule of SPA.
   */
  readonly parserReasons: boolean;
}

/** SPA's filter: `is_good_response` on FrozenLake and Sudoku rows, Sokoban rows unfiltered. */
export const SPA_MALFORMED_FILTER: MalformedFilter = { envs: ['frozenlake', 'sudoku'], parserReasons: false };

/**
 * One SftRow per assistant turn (`sftRowsOf`), each accepted or rejected on its own: a bad turn
 * costs only its own row. Later rows keep it in their prompt, as SPA's do (its rows are cut from
 * the whole conversation before filtering). Rejections carry the row and name the turn.
 */
export function filterMalformedRows(
  filter: MalformedFilter,
  rows: SftRowOptions,
): OperatorFunction<AnnotatedTrajectory, Verdict<SftRow>> {
  const filtered = new Set(filter.envs);
  return mergeMap((trajectory) =>
    sftRowsOf(trajectory, rows).map((row): Verdict<SftRow> => {
      const problem = filtered.has(trajectory.env)
        ? problemOf(row, trajectory.turns[row.turn], trajectory.mode, filter)
        : null;
      if (problem === null) return { accepted: true, value: row };
      return {
        accepted: false,
        rejection: { key: row.trajectory_id, source: 'filterMalformed', ...problem, value: row },
      };
    }),
  );
}

function problemOf(
  row: SftRow,
  turn: Turn | undefined,
  mode: AnnotatedTrajectory['mode'],
  filter: MalformedFilter,
): { reason: RejectReason; detail: string } | null {
  if (mode === 'wm' && !isWellFormedWorldModelResponse(row.response)) {
    return {
      reason: 'malformed-turn',
      detail: `turn ${row.turn}: response fails the think/observation/prediction/answer structure`,
    };
  }
  if (filter.parserReasons && turn !== undefined && !turn.parse.ok) {
    // A record read back may carry any text here; a reason outside the shared list files as parse-failed.
    const reason = isRejectReason(turn.parse.reason) ? turn.parse.reason : 'parse-failed';
    const named = turn.parse.reason ?? 'no reason';
    return { reason, detail: `turn ${row.turn}: parser ${turn.parse.matched} match, not ok (${named})` };
  }
  return null;
}
