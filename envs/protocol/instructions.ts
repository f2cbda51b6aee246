/**
 * The instruction prefix that opens every SPA conversation (docs/spa-prompts.md#prefix): the env's
 * instruction text (verbatim from SPA `config/envs.yaml`) followed by the symbol legend, the
 * action list and the action budget.
 */
import type { EnvName } from '../types.js';
import type { EnvPromptSpec, GridSize, PromptMode } from './types.js';

/** SPA's `max_actions_per_traj` per env (`config/envs.yaml`, docs/spa-envs.md#manager). */
export const SPA_MAX_ACTIONS_PER_TRAJ: Readonly<Record<EnvName, number>> = {
  sokoban: 10,
  frozenlake: 10,
  sudoku: 50,
};

/** Grid sizes SPA trains on; their instruction texts are kept byte-identical. */
const SPA_GRID_SIZES: Readonly<Record<'sokoban' | 'frozenlake', GridSize>> = {
  sokoban: { rows: 6, cols: 6 },
  frozenlake: { rows: 4, cols: 4 },
};

// Non-ASCII characters are written as escapes so no editor can normalise them:
// \u2013 EN DASH, \u2192 RIGHTWARDS ARROW, \u221a SQUARE ROOT (the "box/player on target" glyph).
// Typos of the original ("targets You are", "Forbid the whole", "cause") are SPA's and kept.

function sokobanWorldModel(corner: string): string {
  return (
    'You are solving the Sokoban puzzle. You are the player and you need to push all boxes to targets You are provided with a symbol grid and the zero-indexed coordinates of the player, each box, and each target. ' +
    `Coordinates range from the top-left corner (0, 0) to the bottom-right corner ${corner}. ` +
    'When you are exactly next to a box, you can push it by moving in the same direction. You cannot push a box through a wall, and you cannot pull a box. The answer should be a sequence of actions, like <answer>Right || Right || Up</answer>. ' +
    'A sample full output is as follows: <think> <observation>######\n#_####\n#_P###\n#_X#_#\n#__O_#\n######\nPlayer (P) is at (2,2); box (X) is at (3,2); target (O) is at (4,3).</observation> ' +
    '1 Down \u2013 I push box to (4,2). 2 Left \u2013 I step to (3,1). 3 Down \u2013 I stand left of box, ready to push it Right onto target. ' +
    '<prediction>######\n#_####\n#__###\n#__#_#\n#PXO_#\n######</prediction> </think> <answer> Down || Left || Down </answer>'
  );
}

const SOKOBAN_BASE =
  'You are solving the Sokoban puzzle. You are the player and you need to push all boxes to targets You are provided with a symbol grid. When you are exactly next to a box, you can push it by moving in the same direction. You cannot push a box through a wall, and you cannot pull a box. The answer should be a sequence of actions, like <answer>Right || Right || Up</answer>.';

function frozenLakeWorldModel(corner: string): string {
  return (
    'You are solving the FrozenLake puzzle. You are the player and you need to Forbid the hole and go to the target. You are provided with a symbol grid and the zero-indexed coordinates of the player, each hole, and each target. ' +
    `Coordinates range from the top-left corner (0, 0) to the bottom-right corner ${corner}. ` +
    'When you are exactly next to goal, you can move in the same direction. You cannot move to a hole cause you will fall into the hole. The answer should be a sequence of actions, like <answer>Right || Right || Up</answer>. ' +
    'A sample full output is as follows: <think> <observation>_O__\nO___\nG___\n__P_</observation> Player (3,2); holes at (0,1) and (1,0); goal at (2,0). ' +
    '1 Up - move to safe ice (2,2). 2 Left - slide to (2,1), adjacent to goal. 3 Left - reach goal (2,0); player now on G. ' +
    '<prediction>_O__\nO___\n\u221a___\n____</prediction> </think> <answer> Up || Left || Left </answer>'
  );
}

const FROZENLAKE_BASE =
  'You are solving the FrozenLake puzzle. Forbid the whole and go to the target. You may move to the unintended direction due to the slippery ice. Example answer format: <think>To forbid the hole and go to the target, I should go left then go up.</think><answer>Left || Up</answer>';

const SUDOKU_OPENING =
  'You are solving 4x4 Sudoku. Fill empty cells with digits 1\u20134. Use a 1-indexed grid (rows/cols start at 1). A move is exactly: row,col,value (three integers). In one turn you may output multiple moves, separated by ||. Only propose moves that keep the row, column, and 2x2 subgrid valid. Always output EXACTLY: <think>[brief reasoning]</think> <answer>[r,c,v || r,c,v ...]</answer> No extra text outside the two tags. ';

const SUDOKU_WORLD_MODEL =
  SUDOKU_OPENING +
  'Keep the response under 100 words. An example output: <think> <observation>| . . 1 4 | 1 4 . 3 | 4 2 . . | . 1 4 2 \nEmpty positions to be filled are at (1,1), (1,2), (2,3), (3,3), (3,4), (4,1)</observation> ' +
  '<prediction>| 2 3 1 4 | 1 4 2 3 | 4 2 3 1 | . 1 4 2\n Empty positions to be filled are at (4,1)</prediction> </think> <answer> 1,1,2 || 1,2,3 || 2,3,2 || 3,3,3 || 3,4,1 </answer>.';

const SUDOKU_BASE =
  SUDOKU_OPENING +
  'Keep the response under 50 words. Example: <think>Row 1 has one empty cell \u2192 place 1. Column 2 then needs 2.</think> <answer>1,3,1 || 3,2,2</answer>';

/** "(rows−1, cols−1)": the bottom-right coordinate sentence fragment. */
function bottomRightCorner(size: GridSize): string {
  const valid = (n: number) => Number.isInteger(n) && n >= 1;
  if (!valid(size.rows) || !valid(size.cols)) {
    throw new RangeError(
      `gridSize ${JSON.stringify(size)} is not a grid size; expected positive integers {rows, cols}`,
    );
  }
  return `(${size.rows - 1}, ${size.cols - 1})`;
}

/**
 * SPA's instruction text for `env` in `mode` (`env_instruction_add_worldmodel` for `wm`,
 * `env_instruction` for `base`). At SPA's grid sizes the text is byte-identical to SPA's;
 * for another `gridSize` only the "bottom-right corner (r, c)" coordinate is changed to
 * (rows−1, cols−1) — the sample outputs inside the text stay SPA's. Sudoku ignores `gridSize`
 * (its text is about 4×4 Sudoku).
 */
export function instructionText(env: EnvName, mode: PromptMode, gridSize?: GridSize): string {
  switch (env) {
    case 'sokoban':
      return mode === 'wm'
        ? sokobanWorldModel(bottomRightCorner(gridSize ?? SPA_GRID_SIZES.sokoban))
        : SOKOBAN_BASE;
    case 'frozenlake':
      return mode === 'wm'
        ? frozenLakeWorldModel(bottomRightCorner(gridSize ?? SPA_GRID_SIZES.frozenlake))
        : FROZENLAKE_BASE;
    case 'sudoku':
      return mode === 'wm' ? SUDOKU_WORLD_MODEL : SUDOKU_BASE;
  }
}

/**
 * The first user message before any turn: `ContextManager._init_prefix_lookup` (docs/spa-prompts.md#prefix).
 * instruction + symbol legend (if the env has one) + action list and the budget line with
 * the `" || "` separator (only if the env has an action table; Sudoku gets the bare instruction).
 */
export function instructionPrefix(spec: EnvPromptSpec, mode: PromptMode, maxActionsPerTraj: number): string {
  if (!Number.isInteger(maxActionsPerTraj) || maxActionsPerTraj < 1) {
    throw new RangeError(`maxActionsPerTraj ${maxActionsPerTraj} is not a positive integer`);
  }
  let prefix = instructionText(spec.name, mode, spec.gridSize);
  // Python truthiness: an empty legend or action table adds nothing.
  if (spec.gridVocabulary) {
    prefix += `\nThe meaning of each symbol in the state is:\n${spec.gridVocabulary}`;
  }
  if (spec.actionNames !== null && spec.actionNames.length > 0) {
    prefix += `\nYour available actions are:\n${spec.actionNames.join(', ')}`;
    prefix += `\nYou can make up to ${maxActionsPerTraj} actions, separated by the action separator " || "\n`;
  }
  return prefix;
}
