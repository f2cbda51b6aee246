import { boxSize, emptyCells, type SudokuGrid } from './sudoku-grid.js';

/**
 * RAGEN `_render_board` (the `text` render, docs/spa-envs.md#sudoku): for each row `"| "` then every cell
 * followed by a space (`.` for empty), e.g. `"| 3 2 4 1 | . 4 . . | 2 . 3 . | 4 3 . 2 "`.
 */
export function renderSudoku(grid: readonly (readonly number[])[]): string {
  // One string built left to right: the env renders after every step (no per-row arrays).
  let text = '';
  for (const row of grid) {
    text += '|';
    for (const v of row) text += v === 0 ? ' .' : ` ${v}`;
    text += ' ';
  }
  return text;
}

/**
 * The `text_with_coordinates` suffix without its leading newline (docs/spa-envs.md#sudoku): empty cells
 * 1-indexed, row-major, with singular/plural/none wording as RAGEN's `render`.
 */
export function describeSudoku(grid: readonly (readonly number[])[]): string {
  const empty = emptyCells(grid).map(({ row, col }) => `(${row + 1},${col + 1})`);
  if (empty.length === 0) return 'No empty positions found (board might be complete).';
  if (empty.length === 1) return `Empty position to be filled is at ${empty[0]}.`;
  return `Empty positions to be filled are at ${empty.join(', ')}.`;
}

/**
 * Inverse of `renderSudoku`: rows separated by `|`, cells by spaces, `.` or `0` for empty.
 * The size is the number of rows, which must be a perfect square with that many cells per row.
 */
export function parseSudokuRender(text: string): SudokuGrid {
  const rows = text
    .split('|')
    .map((row) => row.trim())
    .filter((row) => row.length > 0);
  const size = rows.length;
  boxSize(size);
  return rows.map((row, r) => {
    const cells = row.split(/\s+/);
    if (cells.length !== size) {
      throw new Error(
        `Sudoku render row ${r + 1} ${JSON.stringify(row)}: expected ${size} cells, got ${cells.length}`,
      );
    }
    return cells.map((cell) => {
      if (cell === '.' || cell === '0') return 0;
      const value = /^\d+$/.test(cell) ? Number(cell) : NaN;
      if (!(value >= 1 && value <= size)) {
        throw new Error(
          `Sudoku render row ${r + 1}: cell ${JSON.stringify(cell)} is not '.' or a digit 1..${size}`,
        );
      }
      return value;
    });
  });
}
