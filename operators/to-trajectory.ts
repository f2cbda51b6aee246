import { Observable, type OperatorFunction } from 'rxjs';
import { buildMessages, type HistoryEntry } from '../envs/protocol/index.js';
import type { Trajectory, Turn } from '../schemas/index.js';
import type { StepRecord } from '../schemas/step-record.js';

/**
 * Collects each slot's StepRecords into one Trajectory record, emitted when the slot's final
 * turn arrives. Open trajectories are held in a map keyed by trajectory id; it is bounded by
 * the number of slots in flight (the episode stream runs one batch at a time), so this never
 * grows without limit. A source that completes with open trajectories errors: that is a
 * truncated episode stream, not data to drop silently.
 */
export function toTrajectory(now: () => number = Date.now): OperatorFunction<StepRecord, Trajectory> {
  return (source) =>
    new Observable<Trajectory>((subscriber) => {
      const open = new Map<string, StepRecord[]>();
      return source.subscribe({
        next(record) {
          const turns = open.get(record.trajectoryId) ?? [];
          turns.push(record);
          if (!record.final) {
            open.set(record.trajectoryId, turns);
            return;
          }
          open.delete(record.trajectoryId);
          subscriber.next(assemble(turns, now()));
        },
        error: (error: unknown) => subscriber.error(error),
        complete() {
          if (open.size > 0) {
            subscriber.error(
              new Error(
                `episode stream ended with ${open.size} unfinished trajectories: ${[...open.keys()].join(', ')}`,
              ),
            );
            return;
          }
          subscriber.complete();
        },
      });
    });
}

function assemble(records: readonly StepRecord[], createdAt: number): Trajectory {
  const first = records[0]!;
  const history: HistoryEntry[] = records.map((r) => ({
    state: r.state,
    actionsLeft: r.actionsLeft,
    llmResponse: r.llmResponse,
    rewardText: r.rewardText,
  }));
  const last = records[records.length - 1]!;
  // SPA's history ends with a state-only entry for the state after the last turn, which
  // prepare_for_update drops, so the conversation ends with the last assistant turn
  // (docs/spa-prompts.md#conversation).
  history.push({ state: last.stateAfter, actionsLeft: last.actionsLeft - last.executed.length });
  const messages = buildMessages(first.prefix, history, { mode: first.mode, prepareForUpdate: true });
  const turns: Turn[] = records.map((r) => ({
    turn: r.turn - 1,
    state: r.state,
    response_raw: r.responseRaw,
    llm_response: r.llmResponse,
    parse: {
      matched: r.parse.matched,
      ok: r.parse.ok,
      reason: r.parse.reason,
      actions: r.parse.actions,
      penalty: r.parse.penalty,
    },
    executed: r.executed,
    rewards: r.rewards,
    reward_text: r.rewardText,
    state_after: r.stateAfter,
    done: r.final,
  }));
  return {
    trajectory_id: first.trajectoryId,
    group_id: first.groupId,
    env: first.env,
    variant: first.variant,
    seed: first.seed,
    slot: first.slot,
    split: first.split,
    mode: first.mode,
    policy: first.policy,
    policy_version: first.policyVersion,
    messages,
    turns,
    states: [first.state, ...records.map((r) => r.stateAfter)],
    success: last.success,
    total_reward: sumInOrder(records.flatMap((r) => r.rewards)),
    penalty: sumInOrder(records.map((r) => r.penalty)),
    num_actions: records.reduce((n, r) => n + r.executed.length, 0),
    created_at: createdAt,
  };
}

/** Left-to-right float sum, as Python's `sum` accumulates it. */
function sumInOrder(values: readonly number[]): number {
  return values.reduce((acc, v) => acc + v, 0);
}
