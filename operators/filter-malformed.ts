import { map, type OperatorFunction } from 'rxjs';
import type { Trajectory } from '../schemas/index.js';
import type { Verdict } from './verdict.js';

/**
 * SPA's structural filter `is_good_response` (reference §6 step 6, testcases §6.4): a
 * case-insensitive `<think>…</think>` starting before `<answer>…</answer>`, and inside the think
 * body at least one observation and one prediction span, the first observation first.
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

/**
 * Rejects a trajectory when any turn failed the parser (reference §4: not `ok`) or, in world-model
 * mode, any assistant message fails SPA's structural filter. The reason names the first bad turn.
 * Trajectory granularity on purpose: a row's prompt contains all earlier turns, so one malformed
 * turn taints every later row of its trajectory.
 */
export function filterMalformed<T extends Trajectory>(): OperatorFunction<T, Verdict<T>> {
  return map((trajectory): Verdict<T> => {
    const problem = firstProblem(trajectory);
    if (problem === null) return { accepted: true, value: trajectory };
    return {
      accepted: false,
      rejection: { key: trajectory.trajectory_id, source: 'filterMalformed', ...problem, value: trajectory },
    };
  });
}

function firstProblem(trajectory: Trajectory): { reason: string; detail: string } | null {
  for (const turn of trajectory.turns) {
    if (!turn.parse.ok) {
      return {
        reason: turn.parse.reason ?? 'parse-failed',
        detail: `turn ${turn.turn}: parser ${turn.parse.matched} match, not ok (${turn.parse.reason ?? 'no reason'})`,
      };
    }
  }
  if (trajectory.mode !== 'wm') return null;
  let t = 0;
  for (const message of trajectory.messages) {
    if (message.role !== 'assistant') continue;
    if (!isWellFormedWorldModelResponse(message.content)) {
      return {
        reason: 'malformed-turn',
        detail: `turn ${t}: response fails the think/observation/prediction/answer structure`,
      };
    }
    t++;
  }
  return null;
}
