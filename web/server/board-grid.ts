/**
 * Boards as grids of cells for the web tap: a state text (docs/spa-prompts.md#states: the grid render plus a
 * coordinate sentence) split into rows of cells and a caption, and a cell-by-cell comparison of
 * the model's belief with the true state.
 */

/** A board as rows of cells, plus the text that is not part of the grid (the coordinate sentence). */
export interface BoardGrid {
  readonly rows: readonly (readonly string[])[];
  readonly caption: string;
}

/**
 * Splits a state text into cells. Sudoku renders on one line as `| a b c d | e f g h | … `
 * (envs/README.md), one `|` segment per row, cells separated by spaces; Sokoban and FrozenLake
 * render one row per line, one character per cell, and their coordinate sentence is the first
 * line with a space in it. Works on any text (a model's belief may be malformed): what does not
 * look like grid rows ends up in the caption.
 */
export function boardGrid(state: string): BoardGrid {
  const lines = state.split('\n');
  const first = lines[0] ?? '';
  if (first.trimStart().startsWith('|')) {
    const rows = first
      .split('|')
      .map((segment) => segment.trim())
      .filter((segment) => segment.length > 0)
      .map((segment) => segment.split(/\s+/));
    return { rows, caption: lines.slice(1).join('\n').trim() };
  }
  const gridEnd = lines.findIndex((line) => line.length === 0 || /\s/.test(line));
  const gridLines = gridEnd === -1 ? lines : lines.slice(0, gridEnd);
  return {
    rows: gridLines.map((line) => [...line]),
    caption: (gridEnd === -1 ? [] : lines.slice(gridEnd)).join('\n').trim(),
  };
}

/**
 * Cells of `believed` that differ from `truth`, as `[row, column]` pairs in row-major order over
 * the larger of the two shapes (a missing cell differs from any present one). An empty belief
 * (no grid at all, e.g. the random policy's empty `<prediction>`) has nothing to compare: none.
 */
export function differingCells(believed: BoardGrid, truth: BoardGrid): [number, number][] {
  if (believed.rows.length === 0) return [];
  const cells: [number, number][] = [];
  const height = Math.max(believed.rows.length, truth.rows.length);
  for (let r = 0; r < height; r++) {
    const [b, t] = [believed.rows[r] ?? [], truth.rows[r] ?? []];
    for (let c = 0; c < Math.max(b.length, t.length); c++) if (b[c] !== t[c]) cells.push([r, c]);
  }
  return cells;
}

/**
 * The contents of the first `<tag>…</tag>` span in `text` (trimmed), or null when there is none.
 * Two `indexOf`s, not a lazy regex: `/<t>(.*?)<\/t>/s` rescans the rest of the text from every
 * unclosed `<t>`, quadratic on a hostile response full of them. When the first `<t>` has no
 * closing tag after it, no later one has either, so this finds the regex's match.
 */
export function firstSpan(text: string, tag: string): string | null {
  const open = `<${tag}>`;
  const start = text.indexOf(open);
  if (start === -1) return null;
  const end = text.indexOf(`</${tag}>`, start + open.length);
  return end === -1 ? null : text.slice(start + open.length, end).trim();
}
