import type { Position } from '../types.js';

/** A Sudoku board: `cells[row][col]` with 0 for an empty cell and 1..N otherwise. */
export type SudokuGrid = number[][];

/** Side of a sub-box: 2 for 4×4, 3 for 9×9 (the board size must be a perfect square). */
export function boxSize(size: number): number {
  const box = Math.round(Math.sqrt(size));
  if (!Number.isInteger(size) || size < 1 || box * box !== size) {
    throw new Error(`Sudoku size must be a perfect square (4, 9, 16, …), got ${size}`);
  }
  return box;
}

/** A deep copy of a grid. */
export function copyGrid(grid: readonly (readonly number[])[]): SudokuGrid {
  return grid.map((row) => [...row]);
}

/** The cell value (0 = empty); throws off the board. */
export function cellAt(grid: readonly (readonly number[])[], row: number, col: number): number {
  const value = grid[row]?.[col];
  if (value === undefined)
    throw new Error(`cell (${row},${col}) is off the ${grid.length}×${grid.length} board`);
  return value;
}

/**
 * RAGEN `_is_valid_move`: `value` does not already occur in the row, the column or the sub-box.
 * The target cell itself is included, so re-writing a cell's own value is not a valid move.
 */
export function isPlacementValid(
  grid: readonly (readonly number[])[],
  row: number,
  col: number,
  value: number,
): boolean {
  const size = grid.length;
  cellAt(grid, row, col); // throws off the board, like every read below would
  const box = boxSize(size);
  const boxRow = Math.floor(row / box) * box;
  const boxCol = Math.floor(col / box) * box;
  const cells = grid[row] as readonly number[];
  for (let i = 0; i < size; i++) {
    // Direct reads: (row, col) is on the board, so every index below is too.
    if (cells[i] === value || (grid[i] as readonly number[])[col] === value) return false;
  }
  for (let r = boxRow; r < boxRow + box; r++) {
    const line = grid[r] as readonly number[];
    for (let c = boxCol; c < boxCol + box; c++) if (line[c] === value) return false;
  }
  return true;
}

/** Empty cells in row-major order (zero-indexed). */
export function emptyCells(grid: readonly (readonly number[])[]): Position[] {
  const empty: Position[] = [];
  grid.forEach((cells, row) =>
    cells.forEach((value, col) => {
      if (value === 0) empty.push({ row, col });
    }),
  );
  return empty;
}

/** RAGEN `_is_board_complete` and `_is_board_correct`: every row, column and box holds 1..N once. */
export function isGridSolved(grid: readonly (readonly number[])[]): boolean {
  const size = grid.length;
  const box = boxSize(size);
  const groups: number[][] = [];
  for (let i = 0; i < size; i++) {
    const boxRow = Math.floor(i / box) * box;
    const boxCol = (i % box) * box;
    const row: number[] = [];
    const col: number[] = [];
    const sub: number[] = [];
    for (let j = 0; j < size; j++) {
      row.push(cellAt(grid, i, j));
      col.push(cellAt(grid, j, i));
      sub.push(cellAt(grid, boxRow + Math.floor(j / box), boxCol + (j % box)));
    }
    groups.push(row, col, sub);
  }
  return groups.every((group) => {
    const seen = new Set(group);
    return seen.size === size && group.every((v) => v >= 1 && v <= size);
  });
}

/**
 * Whether no row, column or box holds the same digit twice (empty cells ignored). A board with
 * no conflicts stays that way under the env's writes, which all pass `isPlacementValid`; so for
 * such a board "solved" is "no empty cell left" (`isGridSolved` on a conflict-free board whose
 * digits are 1..N).
 */
export function isConflictFree(grid: readonly (readonly number[])[]): boolean {
  const size = grid.length;
  const box = boxSize(size);
  for (let row = 0; row < size; row++) {
    for (let col = 0; col < size; col++) {
      const value = cellAt(grid, row, col);
      if (value === 0) continue;
      const boxRow = Math.floor(row / box) * box;
      const boxCol = Math.floor(col / box) * box;
      for (let i = 0; i < size; i++) {
        const r = boxRow + Math.floor(i / box);
        const c = boxCol + (i % box);
        if (i !== col && cellAt(grid, row, i) === value) return false;
        if (i !== row && cellAt(grid, i, col) === value) return false;
        if ((r !== row || c !== col) && cellAt(grid, r, c) === value) return false;
      }
    }
  }
  return true;
}

/** Number of empty (0) cells. */
export function countEmpty(grid: readonly (readonly number[])[]): number {
  let empty = 0;
  for (const cells of grid) for (const value of cells) if (value === 0) empty++;
  return empty;
}
