import { boxSize, cellAt, copyGrid, type SudokuGrid } from './sudoku-grid.js';

/**
 * Solutions of `grid`, at most `limit` of them, by backtracking on the empty cell with the fewest
 * candidates first (RAGEN `_count_solutions`, docs/spa-envs.md#sudoku). Hand-written: a few dozen lines and
 * RAGEN's uniqueness test needs exactly this early-stopping count, which Sudoku libraries hide.
 */
export function findSolutions(grid: readonly (readonly number[])[], limit: number): SudokuGrid[] {
  const board = copyGrid(grid);
  const solutions: SudokuGrid[] = [];
  const search = (): void => {
    if (solutions.length >= limit) return;
    const choice = fewestCandidates(board);
    if (choice === null) {
      solutions.push(copyGrid(board));
      return;
    }
    const { row, col, candidates } = choice;
    for (const value of candidates) {
      (board[row] as number[])[col] = value;
      search();
      if (solutions.length >= limit) return;
    }
    (board[row] as number[])[col] = 0;
  };
  search();
  return solutions;
}

/** RAGEN `_count_solutions(board, limit)`: 0, 1, … up to `limit` (default 2: "is it unique?"). */
export function countSolutions(grid: readonly (readonly number[])[], limit = 2): number {
  return findSolutions(grid, limit).length;
}

/** The unique solution of `grid`, or null when it has none or more than one. */
export function solveUnique(grid: readonly (readonly number[])[]): SudokuGrid | null {
  const solutions = findSolutions(grid, 2);
  return solutions.length === 1 ? (solutions[0] as SudokuGrid) : null;
}

interface Choice {
  readonly row: number;
  readonly col: number;
  readonly candidates: number[];
}

/** RAGEN `find_min_choice_cell`: first empty cell (row-major) with the fewest candidates. */
function fewestCandidates(board: SudokuGrid): Choice | null {
  const size = board.length;
  const box = boxSize(size);
  let best: Choice | null = null;
  for (let row = 0; row < size; row++) {
    for (let col = 0; col < size; col++) {
      if (cellAt(board, row, col) !== 0) continue;
      const used = new Set<number>();
      const boxRow = Math.floor(row / box) * box;
      const boxCol = Math.floor(col / box) * box;
      for (let i = 0; i < size; i++) {
        used.add(cellAt(board, row, i));
        used.add(cellAt(board, i, col));
        used.add(cellAt(board, boxRow + Math.floor(i / box), boxCol + (i % box)));
      }
      const candidates: number[] = [];
      for (let v = 1; v <= size; v++) if (!used.has(v)) candidates.push(v);
      if (best === null || candidates.length < best.candidates.length) {
        best = { row, col, candidates };
        if (candidates.length <= 1) return best;
      }
    }
  }
  return best;
}
