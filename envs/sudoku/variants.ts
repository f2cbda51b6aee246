import type { SudokuDifficulty } from './generator.js';

/** Sudoku configuration (RAGEN `SudokuEnvConfig` defaults, docs/spa-envs.md#sudoku). */
export interface SudokuConfig {
  /** Board side (a perfect square; SPA: 4). */
  readonly size: number;
  /** Env step cap: `done` once this many steps were taken (every call counts). */
  readonly maxSteps: number;
  readonly difficulty: SudokuDifficulty;
}

/** SPA default: 4×4, 30 steps, easy (10 clues → 6 empty cells). */
export const SUDOKU_EASY: SudokuConfig = { size: 4, maxSteps: 30, difficulty: 'easy' };
/** 4×4 with 9 clues. */
export const SUDOKU_MEDIUM: SudokuConfig = { size: 4, maxSteps: 30, difficulty: 'medium' };
/** 4×4 with 6 clues (when uniqueness allows digging that far). */
export const SUDOKU_HARD: SudokuConfig = { size: 4, maxSteps: 30, difficulty: 'hard' };

/** Variants by name, for CLIs and configs. */
export const SUDOKU_VARIANTS: Readonly<Record<SudokuDifficulty, SudokuConfig>> = {
  easy: SUDOKU_EASY,
  medium: SUDOKU_MEDIUM,
  hard: SUDOKU_HARD,
};
