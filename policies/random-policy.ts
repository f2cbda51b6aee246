import type { PromptMode } from '../envs/protocol/index.js';
import { Rng, streamRng } from '../envs/rng.js';
import type { Policy, PolicyRequest } from './policy.js';

/** SPA's fixed thought for the random generator (`RandomActionWrapperWg`, docs/spa-data.md#ablations). */
const RANDOM_POLICY_THOUGHT = 'I will push the box to the target.';

/**
 * SPA's random-action generator (the paper's random-generator ablation, docs/spa-data.md#ablations): three
 * uniformly random actions joined by " || ". Unlike SPA it writes the world-model format with
 * empty observation/prediction, so ground-truth annotation turns its episodes into valid SFT
 * data. Sudoku has no action vocabulary; a random move is `r,c,v` with each part in 1..4.
 */
export function randomPolicy(
  options: { seed?: number; mode?: PromptMode; actionsPerTurn?: number } = {},
): Policy {
  const seed = options.seed ?? 0;
  const sequence = new Rng(seed);
  const mode = options.mode ?? 'wm';
  const count = options.actionsPerTurn ?? 3;
  return {
    name: 'random',
    version: 0,
    act: async (requests: readonly PolicyRequest[]) =>
      requests.map((request) => {
        const rng = request.stream === undefined ? sequence : streamRng(seed, request.stream);
        const names = request.view.actionNames;
        const actions = Array.from({ length: count }, () =>
          names ? rng.pick(names) : `${rng.int(1, 4)},${rng.int(1, 4)},${rng.int(1, 4)}`,
        );
        const answer = `<answer>${actions.join(' || ')}</answer>`;
        return mode === 'wm'
          ? ` <observation></observation> ${RANDOM_POLICY_THOUGHT} <prediction></prediction></think>${answer}`
          : ` ${RANDOM_POLICY_THOUGHT}</think>${answer}`;
      }),
  };
}
