/**
 * The contract every SPA environment implements (docs/spa-envs.md). Environments are pure,
 * seeded, synchronous state machines: no I/O, no wall clock, no global RNG.
 */

export type EnvName = 'sokoban' | 'frozenlake' | 'sudoku';

/** Zero-indexed (row, col) grid position. */
export interface Position {
  readonly row: number;
  readonly col: number;
}

/** Number of rows and columns of a grid env; coordinates run from (0, 0) to (rows−1, cols−1). */
export interface GridSize {
  readonly rows: number;
  readonly cols: number;
}

/** What one env step reports (RAGEN's `info` plus reward/done). */
export interface StepOutcome {
  /** Per-action reward exactly as the reference env returns it. */
  readonly reward: number;
  readonly done: boolean;
  /** `info.success`: the puzzle is solved in the resulting state. */
  readonly success: boolean;
  /** `info.action_is_effective`: the state changed. */
  readonly effective: boolean;
  /** `info.action_is_valid`: the action was well formed for the env (Sudoku can say false). */
  readonly valid: boolean;
}

/**
 * An action after SPA's `_extract_map_valid_actions` lookup: an action id for envs with an
 * action vocabulary (Sokoban, FrozenLake), the raw string for free-form envs (Sudoku).
 */
export type EnvAction = number | string;

export interface Environment {
  readonly name: EnvName;
  /**
   * Whether rewards are Python floats (Sokoban, Sudoku) or ints (FrozenLake on
   * gymnasium ≥ 1.1). Prompts print turn rewards with Python's repr, so `0` vs `0.0` matters
   * (docs/spa-prompts.md#reward-text).
   */
  readonly rewardIsFloat: boolean;
  /** Action names in id order (ids start at 1), or null when actions are free text (Sudoku). */
  readonly actionNames: readonly string[] | null;
  /** Grid dimensions for the instruction's "Coordinates range from …" sentence; absent for Sudoku. */
  readonly gridSize?: GridSize;
  /** Symbol legend for the instruction prefix (docs/spa-prompts.md#prefix), or null (Sudoku). */
  readonly gridVocabulary: string | null;
  /**
   * SPA's lookup: case-insensitive match of the whole string (no trimming beyond what the
   * parser did); undefined means the action is dropped (a format error upstream).
   */
  lookupAction(text: string): EnvAction | undefined;
  /** Generate and load the puzzle for `seed` with this env's own seeded generator. */
  reset(seed: number): void;
  /** Apply one action; after `done` the caller must not step again. */
  step(action: EnvAction): StepOutcome;
  /** SPA's text render, byte-exact (no trailing newline for grids). */
  render(): string;
  /** The coordinate sentence of docs/spa-prompts.md#states (without a leading newline). */
  describe(): string;
  /** `render() + "\n" + describe()`: the `text_with_coordinates` state shown to the model. */
  state(): string;
  /** Whether the current state is terminal (solved, failed, or the env's step cap reached). */
  isDone(): boolean;
  /** An independent copy (for solvers and look-ahead). */
  clone(): Environment;
}
