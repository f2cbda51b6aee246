import type { EnvAction, Environment, StepOutcome } from '../types.js';
import { parseSudokuAction } from './action-parser.js';
import { generateSudoku } from './generator.js';
import {
  cellAt,
  copyGrid,
  countEmpty,
  isConflictFree,
  isGridSolved,
  isPlacementValid,
  type SudokuGrid,
} from './sudoku-grid.js';
import { describeSudoku, parseSudokuRender, renderSudoku } from './sudoku-render.js';
import { SUDOKU_EASY, type SudokuConfig } from './variants.js';

interface Episode {
  /** The initial puzzle: its non-empty cells are clues that can never be changed. */
  readonly clues: SudokuGrid;
  board: SudokuGrid;
  /** The generator's full board when known (`reset`); success never depends on it. */
  readonly solution: SudokuGrid | null;
  steps: number;
  /** Empty cells of `board`, kept up to date by `step`. */
  empties: number;
  /**
   * The board had no row/column/box conflict when loaded; every write passes the constraint check,
   * so it still has none and solved ⇔ `empties === 0`. False for a conflicting custom board, which
   * is then checked in full.
   */
  readonly conflictFree: boolean;
  /** render()/describe() of the current board; cleared on every write. */
  rendered: string | null;
  described: string | null;
}

/** An episode on `board` (a copy is not made) with its counters and caches initialised. */
function episodeOf(
  clues: SudokuGrid,
  board: SudokuGrid,
  solution: SudokuGrid | null,
  steps: number,
): Episode {
  return {
    clues,
    board,
    solution,
    steps,
    empties: countEmpty(board),
    conflictFree: isConflictFree(board),
    rendered: null,
    described: null,
  };
}

/**
 * 4×4 Sudoku as SPA plays it (mll-lab-nu/RAGEN `SudokuEnv`, docs/spa-envs.md#sudoku): free-text moves
 * `"r,c,v"`, `"r c v"` or `"… row R … col C …"` (1-indexed); every step call counts toward the
 * 30-step cap; reward 1.0 when the board becomes complete and correct, else 0.0 (Python floats).
 */
export class SudokuEnv implements Environment {
  readonly name = 'sudoku' as const;
  readonly rewardIsFloat = true;
  /** No action vocabulary: every parsed string reaches the env (docs/spa-protocol.md#actions). */
  readonly actionNames = null;
  readonly gridVocabulary = null;
  readonly config: SudokuConfig;
  private episode: Episode | null = null;

  constructor(config: SudokuConfig = SUDOKU_EASY) {
    this.config = config;
  }

  /**
   * An env on a given puzzle render (`"| 4 . . 3 | …"`): its filled cells are the clues. `board`
   * (same format) sets the current position, default the puzzle; it must agree with every clue.
   */
  static fromPuzzle(puzzle: string, board?: string, config: Partial<SudokuConfig> = {}): SudokuEnv {
    const clues = parseSudokuRender(puzzle);
    const current = board === undefined ? copyGrid(clues) : parseSudokuRender(board);
    if (current.length !== clues.length) {
      throw new Error(
        `Sudoku board is ${current.length}×${current.length} but the puzzle is ${clues.length}×${clues.length}`,
      );
    }
    clues.forEach((row, r) =>
      row.forEach((clue, c) => {
        if (clue !== 0 && cellAt(current, r, c) !== clue) {
          throw new Error(
            `Sudoku board cell (${r + 1},${c + 1}) is ${cellAt(current, r, c)} but the puzzle's clue there is ${clue}`,
          );
        }
      }),
    );
    const env = new SudokuEnv({ ...SUDOKU_EASY, ...config, size: clues.length });
    env.episode = episodeOf(clues, current, null, 0);
    return env;
  }

  /** Every string passes through unchanged (SPA has no Sudoku action table). */
  lookupAction(text: string): EnvAction | undefined {
    return text;
  }

  /** Generate the puzzle for `seed` (our `Rng`; see `generateSudoku`) and reset the step counter. */
  reset(seed: number): void {
    const { puzzle, solution } = generateSudoku(this.config, seed);
    this.episode = episodeOf(puzzle, copyGrid(puzzle), solution, 0);
  }

  /**
   * RAGEN `SudokuEnv.step`: count the step; unparseable, out-of-range, value ∉ 1..N or clue cell
   * ⇒ invalid, no change; breaks a row/column/box ⇒ valid but not effective, no change; else
   * write (a filled non-clue cell may be overwritten). Done when solved or at `maxSteps`.
   */
  step(action: EnvAction): StepOutcome {
    const episode = this.current();
    if (typeof action !== 'string') {
      throw new Error(`Sudoku action must be a string like "2,1,3", got ${JSON.stringify(action)}`);
    }
    episode.steps += 1;
    const capped = episode.steps >= this.config.maxSteps;
    const move = parseSudokuAction(action);
    const size = this.config.size;
    const valid =
      move !== null &&
      move.row >= 0 &&
      move.row < size &&
      move.col >= 0 &&
      move.col < size &&
      move.value >= 1 &&
      move.value <= size &&
      cellAt(episode.clues, move.row, move.col) === 0;
    if (move === null || !valid) {
      return { reward: 0.0, done: capped, success: false, effective: false, valid: false };
    }
    if (!isPlacementValid(episode.board, move.row, move.col, move.value)) {
      return { reward: 0.0, done: capped, success: false, effective: false, valid: true };
    }
    const cells = episode.board[move.row] as number[];
    if (cells[move.col] === 0) episode.empties -= 1;
    cells[move.col] = move.value;
    episode.rendered = null;
    episode.described = null;
    const success = this.isSolved();
    return { reward: success ? 1.0 : 0.0, done: success || capped, success, effective: true, valid: true };
  }

  /** RAGEN's text render, cached until the board changes. */
  render(): string {
    const episode = this.current();
    episode.rendered ??= renderSudoku(episode.board);
    return episode.rendered;
  }

  /** The `text_with_coordinates` sentence (1-indexed empty cells, docs/spa-envs.md#sudoku). */
  describe(): string {
    const episode = this.current();
    episode.described ??= describeSudoku(episode.board);
    return episode.described;
  }

  state(): string {
    return `${this.render()}\n${this.describe()}`;
  }

  isDone(): boolean {
    return this.isSolved() || this.current().steps >= this.config.maxSteps;
  }

  /** The board is complete and every row, column and box holds 1..N once. */
  isSolved(): boolean {
    const episode = this.current();
    return episode.conflictFree ? episode.empties === 0 : isGridSolved(episode.board);
  }

  /** Step calls so far (RAGEN `current_step`). */
  get steps(): number {
    return this.current().steps;
  }

  /** A copy of the current board (0 = empty). */
  get board(): SudokuGrid {
    return copyGrid(this.current().board);
  }

  /** A copy of the clue grid (the initial puzzle). */
  get clues(): SudokuGrid {
    return copyGrid(this.current().clues);
  }

  /** The generator's solution after `reset`, null for `fromPuzzle` envs (use `solveUnique`). */
  get solution(): SudokuGrid | null {
    const { solution } = this.current();
    return solution === null ? null : copyGrid(solution);
  }

  clone(): SudokuEnv {
    const copy = new SudokuEnv(this.config);
    const episode = this.episode;
    if (episode !== null) {
      copy.episode = {
        ...episode,
        clues: copyGrid(episode.clues),
        board: copyGrid(episode.board),
        solution: episode.solution === null ? null : copyGrid(episode.solution),
      };
    }
    return copy;
  }

  private current(): Episode {
    if (this.episode === null) {
      throw new Error('SudokuEnv: no puzzle loaded; call reset(seed) or use SudokuEnv.fromPuzzle first');
    }
    return this.episode;
  }
}
