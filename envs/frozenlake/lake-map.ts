import type { Position } from '../types.js';

/** A tile of gymnasium's `desc`: start, frozen floor, hole, goal (docs/spa-envs.md#frozenlake). */
export type LakeTile = 'S' | 'F' | 'H' | 'G';

/** A rectangular FrozenLake map (rows of tiles) with exactly one goal. */
export interface LakeMap {
  readonly rows: number;
  readonly cols: number;
  /** `tiles[row][col]`, the gymnasium `desc` as characters. */
  readonly tiles: readonly (readonly LakeTile[])[];
}

const TILES: ReadonlySet<string> = new Set(['S', 'F', 'H', 'G']);

/**
 * Build a map from `desc` rows (`"SFFF"`, …), the format of gymnasium's `desc` and of the
 * `desc` field in `envs/puzzles/frozenlake-4x4.jsonl`. Requires equal-length rows of S/F/H/G
 * with exactly one S and exactly one G (what RAGEN's generator always produces).
 */
export function parseLakeDesc(desc: readonly string[]): LakeMap {
  if (desc.length === 0) throw new Error('FrozenLake desc: expected at least one row, got []');
  const tiles = desc.map((row, r) => {
    const cells = Array.from(row);
    for (const cell of cells) {
      if (!TILES.has(cell)) {
        throw new Error(
          `FrozenLake desc row ${r} ${JSON.stringify(row)}: unexpected tile ${JSON.stringify(cell)}; tiles are S, F, H, G`,
        );
      }
    }
    return cells as LakeTile[];
  });
  const map = checkRectangular(tiles, 'FrozenLake desc');
  const starts = findTiles(map, 'S').length;
  if (starts !== 1) throw new Error(`FrozenLake desc: expected exactly one S, found ${starts}`);
  requireOneGoal(map, 'FrozenLake desc');
  return map;
}

/** Check that all rows have the same non-zero length and wrap them as a map. */
export function checkRectangular(tiles: LakeTile[][], what: string): LakeMap {
  const cols = tiles[0]?.length ?? 0;
  if (cols === 0) throw new Error(`${what}: rows must not be empty`);
  tiles.forEach((row, r) => {
    if (row.length !== cols) {
      throw new Error(`${what}: row ${r} has ${row.length} cells, expected ${cols} like row 0`);
    }
  });
  return { rows: tiles.length, cols, tiles };
}

/** Throw unless the map has exactly one G (the env's success test and describe() assume one). */
export function requireOneGoal(map: LakeMap, what: string): void {
  const goals = findTiles(map, 'G').length;
  if (goals !== 1) throw new Error(`${what}: expected exactly one goal G, found ${goals}`);
}

/** The tile at a position (the position must be on the map). */
export function tileAt(map: LakeMap, pos: Position): LakeTile {
  const tile = map.tiles[pos.row]?.[pos.col];
  if (tile === undefined) {
    throw new Error(`position (${pos.row},${pos.col}) is off the ${map.rows}x${map.cols} map`);
  }
  return tile;
}

/** All positions holding `tile`, in row-major order. */
export function findTiles(map: LakeMap, tile: LakeTile): Position[] {
  const found: Position[] = [];
  map.tiles.forEach((rowTiles, row) =>
    rowTiles.forEach((t, col) => {
      if (t === tile) found.push({ row, col });
    }),
  );
  return found;
}

/** The map's `desc` rows, e.g. `["SFFF", "FHFH", …]`. */
export function lakeDesc(map: LakeMap): string[] {
  return map.tiles.map((row) => row.join(''));
}

/**
 * RAGEN `is_valid` (docs/spa-envs.md#frozenlake): depth-first search from S over non-hole tiles; true when a
 * step reaches G. (Hand-written: a dozen lines, no graph library needed.)
 */
export function isGoalReachable(map: LakeMap): boolean {
  const [start] = findTiles(map, 'S');
  if (start === undefined) return false;
  const frontier: Position[] = [start];
  const discovered = new Set<number>();
  while (frontier.length > 0) {
    const { row, col } = frontier.pop() as Position;
    if (discovered.has(row * map.cols + col)) continue;
    discovered.add(row * map.cols + col);
    for (const [dr, dc] of [
      [1, 0],
      [0, 1],
      [-1, 0],
      [0, -1],
    ] as const) {
      const next = { row: row + dr, col: col + dc };
      if (next.row < 0 || next.row >= map.rows || next.col < 0 || next.col >= map.cols) continue;
      const tile = tileAt(map, next);
      if (tile === 'G') return true;
      if (tile !== 'H') frontier.push(next);
    }
  }
  return false;
}
