/**
 * Shared types of the env ↔ LLM text protocol (docs/spa-prompts.md, docs/spa-protocol.md): which
 * prompt/parse dialect is spoken, what an env must expose to be prompted, and one turn of history.
 */
import type { Environment } from '../types.js';

/**
 * The two SPA dialects: `wm` = SPA's `add_worldmodel` mode (self-play data generation, asks
 * for `<observation>`/`<prediction>`), `base` = RAGEN's base mode (PPO and evaluation).
 */
export type PromptMode = 'wm' | 'base';

export type { GridSize } from '../types.js';

/**
 * What the protocol needs from an env. Every `Environment` satisfies it structurally;
 * `gridSize` is only read to fill the "Coordinates range from …" sentence (docs/spa-prompts.md#prefix) and
 * defaults to SPA's size (Sokoban 6×6, FrozenLake 4×4).
 */
export type EnvPromptSpec = Pick<
  Environment,
  'name' | 'actionNames' | 'gridVocabulary' | 'lookupAction' | 'rewardIsFloat' | 'gridSize'
>;

/**
 * The part of an env the parser needs: SPA's `_extract_map_valid_actions` lookup
 * (docs/spa-protocol.md#actions).
 */
export type ActionLookup = Pick<Environment, 'lookupAction'>;

/**
 * One entry of SPA's per-env `history` (docs/spa-prompts.md#conversation). A turn normally carries
 * all four fields; the final entry after the last turn carries only `state` and `actionsLeft`. Mutable because the
 * episode loop fills in `llmResponse`/`rewardText` once the turn is played, as SPA does.
 */
export interface HistoryEntry {
  /** `text_with_coordinates` state shown in this turn's user message. */
  state?: string;
  /** Remaining per-trajectory action budget; required whenever `state` is set. */
  actionsLeft?: number;
  /** What SPA stores as `llm_response`: the canonical text, or the raw text on a parse failure. */
  llmResponse?: string;
  /** The turn reward already rendered with Python's `str()` (see `turnRewardText`). */
  rewardText?: string;
}
