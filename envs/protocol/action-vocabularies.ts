/**
 * SPA's action and symbol vocabularies (docs/spa-envs.md, docs/spa-prompts.md#prefix) as constants,
 * plus the lookup of `_extract_map_valid_actions` (docs/spa-protocol.md#actions). The env classes reuse these
 * so prompts, parser and envs can never disagree.
 */
import type { EnvAction, EnvName } from '../types.js';
import type { EnvPromptSpec } from './types.js';

/** Sokoban `action_lookup` {1: Up, 2: Down, 3: Left, 4: Right}, in id order (id = index + 1). */
export const SOKOBAN_ACTION_NAMES: readonly string[] = ['Up', 'Down', 'Left', 'Right'];

/** FrozenLake `action_lookup` {1: Left, 2: Down, 3: Right, 4: Up}, in id order (id = index + 1). */
export const FROZENLAKE_ACTION_NAMES: readonly string[] = ['Left', 'Down', 'Right', 'Up'];

/** Sokoban `grid_vocab`, joined as in the prefix (docs/spa-prompts.md#prefix). */
export const SOKOBAN_GRID_VOCABULARY =
  '#: wall, _: empty, O: target, √: box on target, X: box, P: player, S: player on target';

/** FrozenLake `grid_vocab`, joined as in the prefix (docs/spa-prompts.md#prefix). */
export const FROZENLAKE_GRID_VOCABULARY =
  'P: player, _: empty, O: hole, G: goal, X: player in hole, √: player on goal';

/**
 * SPA's lookup for envs with an action table: case-insensitive match of the *whole* string
 * (`rev = {name.lower(): id}`), so "up" maps but "Up." / "Move up" / "U" do not
 * (docs/spa-protocol.md#actions).
 * Returns the 1-based action id or undefined (the action is dropped: a format error).
 */
export function tableLookup(actionNames: readonly string[]): (text: string) => EnvAction | undefined {
  const idByLowerName = new Map(actionNames.map((name, index) => [name.toLowerCase(), index + 1]));
  // JS toLowerCase and Python str.lower agree on every string that can lower to an ASCII name.
  return (text) => idByLowerName.get(text.toLowerCase());
}

/**
 * Sudoku has no action table: SPA passes every parsed string to the env unchanged (docs/spa-envs.md#sudoku).
 */
export function freeTextLookup(text: string): EnvAction {
  return text;
}

/** The prompt/parse view of SPA's three envs at SPA's sizes (Sokoban 6×6, FrozenLake 4×4). */
export const SPA_ENV_PROMPT_SPECS: Readonly<Record<EnvName, EnvPromptSpec>> = {
  sokoban: {
    name: 'sokoban',
    actionNames: SOKOBAN_ACTION_NAMES,
    gridVocabulary: SOKOBAN_GRID_VOCABULARY,
    lookupAction: tableLookup(SOKOBAN_ACTION_NAMES),
    rewardIsFloat: true,
  },
  frozenlake: {
    name: 'frozenlake',
    actionNames: FROZENLAKE_ACTION_NAMES,
    gridVocabulary: FROZENLAKE_GRID_VOCABULARY,
    lookupAction: tableLookup(FROZENLAKE_ACTION_NAMES),
    // gymnasium ≥ 1.1 returns int rewards (docs/spa-envs.md#frozenlake).
    rewardIsFloat: false,
  },
  sudoku: {
    name: 'sudoku',
    actionNames: null,
    gridVocabulary: null,
    lookupAction: freeTextLookup,
    rewardIsFloat: true,
  },
};
