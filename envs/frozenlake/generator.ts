import { Rng } from '../rng.js';
import { isGoalReachable, type LakeMap, type LakeTile } from './lake-map.js';

/** Map-generation parameters (RAGEN `FrozenLakeEnvConfig`, docs/spa-envs.md#frozenlake). */
export interface LakeMapOptions {
  /** Side length of the square map (SPA: 4; 6 for Qwen2.5-3B). */
  readonly size: number;
  /** Probability that a tile is frozen floor (holes: 1 − p). SPA-era default 0.8. */
  readonly p: number;
}

/**
 * RAGEN `generate_random_map` on our seeded `Rng` (docs/spa-envs.md#frozenlake): draw every tile F with
 * probability `p` else H, draw start and goal uniformly over all cells; if they differ, write
 * S and G and accept when G is reachable from S without crossing a hole; otherwise redraw.
 * Same seed ⇒ same map. Not bit-identical to gymnasium's PCG64 stream (the paper's maps ship as
 * data in `envs/puzzles/frozenlake-4x4.jsonl`).
 */
export function generateLakeMap(options: LakeMapOptions, seed: number): LakeMap {
  const { size, p } = options;
  if (!Number.isInteger(size) || size < 2) {
    throw new Error(`FrozenLake size must be an integer ≥ 2 (start and goal differ), got ${size}`);
  }
  if (!(p >= 0 && p <= 1)) throw new Error(`FrozenLake p must be in [0, 1], got ${p}`);
  const rng = new Rng(seed);
  for (;;) {
    const tiles: LakeTile[][] = Array.from({ length: size }, () =>
      Array.from({ length: size }, (): LakeTile => (rng.chance(p) ? 'F' : 'H')),
    );
    const start = { row: rng.int(0, size - 1), col: rng.int(0, size - 1) };
    const goal = { row: rng.int(0, size - 1), col: rng.int(0, size - 1) };
    if (start.row === goal.row && start.col === goal.col) continue;
    (tiles[start.row] as LakeTile[])[start.col] = 'S';
    (tiles[goal.row] as LakeTile[])[goal.col] = 'G';
    const map: LakeMap = { rows: size, cols: size, tiles };
    if (isGoalReachable(map)) return map;
  }
}
