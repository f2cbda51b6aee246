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
  const box = boxSize(size);
  const boxRow = Math.floor(row / box) * box;
  const boxCol = Math.floor(col / box) * box;
  for (let i = 0; i < size; i++) {
    if (cellAt(grid, row, i) === value || cellAt(grid, i, col) === value) return false;
    if (cellAt(grid, boxRow + Math.floor(i / box), boxCol + (i % box)) === value) return false;
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
