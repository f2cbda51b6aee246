import type { PromptMode } from '../../envs/protocol/index.js';
import type { Policy, PolicyRequest } from './policy.js';
import { deterministicCopy, planShortest } from './oracle-planner.js';

/**
 * An upper-bound policy for tests and data sanity: reads the true env (privileged `view`),
 * writes the correct observation, a shortest plan (at most `actionsPerTurn` actions) and the
 * state it expects after them. On FrozenLake a slip can make the prediction wrong; ground-truth
 * annotation fixes that, as it does for a model.
 */
export function oraclePolicy(options: { mode?: PromptMode; actionsPerTurn?: number } = {}): Policy {
  const mode = options.mode ?? 'wm';
  const perTurn = options.actionsPerTurn ?? 5;
  return {
    name: 'oracle',
    version: 0,
    act: async (requests: readonly PolicyRequest[]) =>
      requests.map((request) => respond(request, mode, perTurn)),
  };
}

function respond(request: PolicyRequest, mode: PromptMode, perTurn: number): string {
  const env = request.view;
  const plan = (planShortest(env) ?? []).slice(0, Math.min(perTurn, request.actionsLeft));
  const thought = plan.length > 0 ? `Shortest plan: ${plan.join(', ')}.` : 'No plan found.';
  const answer = `<answer>${plan.join(' || ')}</answer>`;
  if (mode === 'base') return ` ${thought}</think>${answer}`;
  const predicted = deterministicCopy(env);
  for (const action of plan) {
    const id = predicted.lookupAction(action);
    if (id === undefined || predicted.step(id).done) break;
  }
  return ` <observation>${env.state()}</observation> ${thought} <prediction>${predicted.state()}</prediction></think>${answer}`;
}
