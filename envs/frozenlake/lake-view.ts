import type { Position } from '../types.js';
import type { LakeMap, LakeTile } from './lake-map.js';
import { describeLake, renderLake } from './lake-render.js';

/**
 * Per-map tables for the env's hot path (step + render): the map is immutable, so these are
 * built once when a map is loaded and shared by clones. Renders and descriptions built from them
 * equal `renderLake` / `describeLake` byte for byte (test/envs/env-fast-paths.test.ts checks every
 * cell of every SPA puzzle); those two stay the readable definitions.
 */
export interface LakeView {
  readonly rows: number;
  readonly cols: number;
  /** `tiles[row * cols + col]`, the map flattened row-major. */
  readonly tiles: readonly LakeTile[];
  /** Each row's render without the player. */
  readonly floorRows: readonly string[];
  /** `playerRows[cell]`: the render of the cell's row with the player on that cell. */
  readonly playerRows: readonly string[];
  /** `describeLake` after the player clause: `; hole (O) is at (r,c)…; goal (G) is at (r,c).` */
  readonly describeTail: string;
}

/** Build the tables of `map` (rows × cols short strings; cheap next to generating the map). */
export function lakeView(map: LakeMap): LakeView {
  const { rows, cols } = map;
  const tiles = map.tiles.flat();
  const noPlayer = { row: -1, col: -1 };
  const floorRows = renderLake(map, noPlayer).split('\n');
  const playerRows: string[] = [];
  for (let row = 0; row < rows; row++) {
    // One-row maps through renderLake keep a single definition of the characters.
    const line: LakeMap = { rows: 1, cols, tiles: [map.tiles[row] as readonly LakeTile[]] };
    for (let col = 0; col < cols; col++) playerRows.push(renderLake(line, { row: 0, col }));
  }
  // describeLake's player clause comes first; everything after it does not depend on the player.
  const sentence = describeLake(map, { row: 0, col: 0 });
  const describeTail = sentence.slice(describeFromTail({ row: 0, col: 0 }, '').length);
  return { rows, cols, tiles, floorRows, playerRows, describeTail };
}

/** `renderLake(map, player)` for the player on `cell` (row-major index), from the view's rows. */
export function renderFromView(view: LakeView, cell: number): string {
  const playerRow = Math.floor(cell / view.cols);
  let text = '';
  for (let row = 0; row < view.rows; row++) {
    if (row > 0) text += '\n';
    text += row === playerRow ? view.playerRows[cell] : view.floorRows[row];
  }
  return text;
}

/** `describeLake(map, player)` for the player on `cell`. */
export function describeFromView(view: LakeView, cell: number): string {
  const row = Math.floor(cell / view.cols);
  return describeFromTail({ row, col: cell - row * view.cols }, view.describeTail);
}

function describeFromTail(player: Position, tail: string): string {
  return `Player (P) is at (${player.row},${player.col})${tail}`;
}
