import { Rng } from '../rng.js';
import { countSolutions } from './solver.js';
import { boxSize, cellAt, copyGrid, type SudokuGrid } from './sudoku-grid.js';

/** RAGEN `SudokuEnvConfig.difficulty`. */
export type SudokuDifficulty = 'easy' | 'medium' | 'hard';

/** A generated puzzle and the full board it was dug from (its unique solution). */
export interface GeneratedSudoku {
  readonly puzzle: SudokuGrid;
  readonly solution: SudokuGrid;
}

/** Generation parameters. */
export interface SudokuGenerationOptions {
  readonly size: number;
  readonly difficulty: SudokuDifficulty;
}

/**
 * RAGEN `_clues_by_difficulty`: how many filled cells to keep. 4×4: easy 10 (6 empty),
 * medium 9, hard 6; 9×9: 36/30/24; other sizes 50 %/40 %/33 % of the cells (floored).
 */
export function cluesFor(size: number, difficulty: SudokuDifficulty): number {
  if (size === 4) return { easy: 10, medium: 9, hard: 6 }[difficulty];
  if (size === 9) return { easy: 36, medium: 30, hard: 24 }[difficulty];
  const cells = size * size;
  return Math.floor({ easy: 0.5, medium: 0.4, hard: 0.33 }[difficulty] * cells);
}

/**
 * RAGEN `_random_puzzle` on our seeded `Rng` (docs/spa-envs.md#sudoku): a full board from the pattern
 * grid shuffled by bands, rows, stacks, columns and digits, then holes dug while the solution
 * stays unique. Same seed ⇒ same puzzle; not bit-identical to CPython's `random.Random(seed)`
 * (the paper's puzzles ship as data in `envs/puzzles/sudoku-4x4.jsonl`).
 */
export function generateSudoku(options: SudokuGenerationOptions, seed: number): GeneratedSudoku {
  const rng = new Rng(seed);
  const solution = fullBoard(options.size, rng);
  const puzzle = digHoles(solution, rng, cluesFor(options.size, options.difficulty));
  return { puzzle, solution };
}

/** RAGEN `_generate_full_board`: `((r·b + r//b + c) mod N) + 1`, then shuffles (no backtracking). */
function fullBoard(size: number, rng: Rng): SudokuGrid {
  const box = boxSize(size);
  const range = (n: number, from = 0): number[] => Array.from({ length: n }, (_, i) => from + i);
  const shuffledLines = (): number[] =>
    rng.shuffle(range(box)).flatMap((group) => rng.shuffle(range(box, group * box)));
  const rows = shuffledLines();
  const cols = shuffledLines();
  const digits = rng.shuffle(range(size, 1));
  const base = (r: number, c: number): number => ((r * box + Math.floor(r / box) + c) % size) + 1;
  return rows.map((r) => cols.map((c) => digits[base(r, c) - 1] as number));
}

/**
 * RAGEN `_make_puzzle_from_solution`: visit cells in shuffled order, empty each one whose removal
 * keeps exactly one solution, until at most `targetClues` cells are filled; then up to 8 extra
 * passes over freshly shuffled orders if the target was not reached.
 */
function digHoles(solution: SudokuGrid, rng: Rng, targetClues: number): SudokuGrid {
  const size = solution.length;
  const puzzle = copyGrid(solution);
  let cells = Array.from({ length: size * size }, (_, i) => ({ row: Math.floor(i / size), col: i % size }));
  let filled = size * size;
  const pass = (): void => {
    for (const { row, col } of cells) {
      if (filled <= targetClues) return;
      const keep = cellAt(puzzle, row, col);
      if (keep === 0) continue;
      (puzzle[row] as number[])[col] = 0;
      if (countSolutions(puzzle, 2) === 1) filled -= 1;
      else (puzzle[row] as number[])[col] = keep;
    }
  };
  cells = rng.shuffle(cells);
  pass();
  for (let attempt = 0; filled > targetClues && attempt < 8; attempt++) {
    cells = rng.shuffle(cells);
    pass();
  }
  return puzzle;
}
