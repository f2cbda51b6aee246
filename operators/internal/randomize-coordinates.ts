import { createHash } from 'node:crypto';
import { Rng } from '../../envs/rng.js';

/**
 * The random-coordinates ablation: keeps the grid lines of a `text_with_coordinates` state and
 * replaces every `(r,c)` pair in the coordinate sentence with a random pair inside the grid.
 * Deterministic per `salt`, so a replay produces the same data.
 */
export function randomizeCoordinates(state: string, salt: string): string {
  const lines = state.split('\n');
  const sentence = lines.pop() ?? '';
  const grid = lines;
  // Sudoku states are a single board line: size 4, 1-indexed; grids are zero-indexed.
  const oneIndexed = grid.length <= 1;
  const rows = oneIndexed ? 4 : grid.length;
  const cols = oneIndexed ? 4 : Math.max(...grid.map((l) => [...l].length));
  const seed = createHash('sha256').update(salt).digest().readInt32LE(0);
  const rng = new Rng(seed);
  const base = oneIndexed ? 1 : 0;
  const randomized = sentence.replace(
    /\((\d+),(\d+)\)/g,
    () => `(${rng.int(base, rows - 1 + base)},${rng.int(base, cols - 1 + base)})`,
  );
  return [...grid, randomized].join('\n');
}
