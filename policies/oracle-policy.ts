import type { PromptMode } from '../envs/protocol/index.js';
import { Rng, streamRng } from '../envs/rng.js';
import type { Policy, PolicyRequest } from './policy.js';
import { deterministicCopy, planShortest } from './oracle-planner.js';

/**
 * An upper-bound policy for tests and data sanity: reads the true env (privileged `view`),
 * writes the correct observation, a shortest plan (at most `actionsPerTurn` actions) and the
 * state it expects after them. On FrozenLake a slip can make the prediction wrong; ground-truth
 * annotation fixes that, as it does for a model.
 *
 * `exploreRate` ε > 0 (one action per turn only): each turn, with probability ε, the action is
 * uniformly random instead of the plan's first, and every thought reads `Action: <a>.`. Then the
 * action is not a function of the state, so a world model trained on these turns must read it
 * (the learning check); with pure oracle data a model can predict the next state by solving
 * the puzzle itself and ignore the action it was given.
 *
 * `states` 'empty' writes `<observation></observation>` and `<prediction></prediction>`: with ε = 1
 * the turns then demonstrate the world-model format and nothing of the game (docs/spa-check.md#start).
 */
export function oraclePolicy(
  options: {
    mode?: PromptMode;
    actionsPerTurn?: number;
    exploreRate?: number;
    seed?: number;
    states?: 'true' | 'empty';
  } = {},
): Policy {
  const mode = options.mode ?? 'wm';
  const perTurn = options.actionsPerTurn ?? 5;
  const explore = options.exploreRate ?? 0;
  if (!(explore >= 0 && explore <= 1)) throw new Error(`oracle exploreRate ${explore}: expected 0..1`);
  if (explore > 0 && perTurn !== 1)
    throw new Error(`oracle exploreRate ${explore} needs one action per turn, got ${perTurn}`);
  const seed = options.seed ?? 0;
  const sequence = new Rng(seed);
  const choose = (request: PolicyRequest): Choice => {
    const rng = request.stream === undefined ? sequence : streamRng(seed, request.stream);
    const plan = (planShortest(request.view) ?? []).slice(0, Math.min(perTurn, request.actionsLeft));
    if (explore === 0)
      return { plan, thought: plan.length > 0 ? `Shortest plan: ${plan.join(', ')}.` : 'No plan found.' };
    const names = request.view.actionNames;
    const action = names && (plan.length === 0 || rng.chance(explore)) ? rng.pick(names) : plan[0];
    return action === undefined
      ? { plan: [], thought: 'No plan found.' }
      : { plan: [action], thought: `Action: ${action}.` };
  };
  return {
    name: 'oracle',
    version: 0,
    act: async (requests: readonly PolicyRequest[]) =>
      requests.map((request) => respond(request, mode, choose(request), options.states ?? 'true')),
  };
}

/** This turn's actions and the thought that names them. */
interface Choice {
  readonly plan: readonly string[];
  readonly thought: string;
}

function respond(
  request: PolicyRequest,
  mode: PromptMode,
  { plan, thought }: Choice,
  states: 'true' | 'empty',
): string {
  const env = request.view;
  const answer = `<answer>${plan.join(' || ')}</answer>`;
  if (mode === 'base') return ` ${thought}</think>${answer}`;
  if (states === 'empty')
    return ` <observation></observation> ${thought} <prediction></prediction></think>${answer}`;
  const predicted = deterministicCopy(env);
  for (const action of plan) {
    const id = predicted.lookupAction(action);
    if (id === undefined || predicted.step(id).done) break;
  }
  return ` <observation>${env.state()}</observation> ${thought} <prediction>${predicted.state()}</prediction></think>${answer}`;
}
