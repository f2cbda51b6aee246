/**
 * `spa env show` and the state-loading options it shares with `spa env play`: which env, which
 * seed, our generator or the paper's puzzle, and a cheap shortest-solution hint.
 */
import { FrozenLakeEnv } from '../../envs/frozenlake/frozenlake-env.js';
import { findTiles, tileAt } from '../../envs/frozenlake/lake-map.js';
import { moveOnLake, type GymDirection } from '../../envs/frozenlake/transitions.js';
import { envFactory, parseEnvName, spaEnv } from '../../envs/registry.js';
import { SokobanEnv } from '../../envs/sokoban/sokoban-env.js';
import { solveSokoban } from '../../envs/sokoban/solver.js';
import { solveUnique } from '../../envs/sudoku/solver.js';
import { emptyCells } from '../../envs/sudoku/sudoku-grid.js';
import { SudokuEnv } from '../../envs/sudoku/sudoku-env.js';
import type { Environment, Position } from '../../envs/types.js';

/** Options of `spa env show|play <env>`. */
export interface EnvStateOptions {
  /** Reset seed; default 10000, SPA's first training seed (docs/spa-envs.md#manager). */
  readonly seed: number;
  /** Load the paper's own puzzle for the seed (envs/puzzles) instead of our generator's. */
  readonly spaPuzzle: boolean;
  readonly variant?: string;
}

/** The env `name` reset to the requested puzzle. */
export function loadEnvState(name: string, options: EnvStateOptions): Environment {
  const env = parseEnvName(name);
  if (options.spaPuzzle) {
    if (options.variant !== undefined) {
      // envFactory checks the variant and names the one SPA puzzles exist for.
      return envFactory({ name: env, variant: options.variant, puzzles: 'spa' })(options.seed);
    }
    return spaEnv(env, options.seed);
  }
  return envFactory({ name: env, variant: options.variant })(options.seed);
}

/**
 * A one-line shortest-solution hint, or null when none is cheap to get. FrozenLake's is the
 * shortest path if no move slipped (the real game is stochastic).
 */
function solutionHint(env: Environment): string | null {
  if (env instanceof SokobanEnv) {
    const path = solveSokoban(env.snapshot(), { maxDepth: 30 });
    return path === null ? null : `Shortest solution: ${plural(path.length, 'action')} (${path.join(', ')})`;
  }
  if (env instanceof SudokuEnv) {
    const empty = emptyCells(env.board).length;
    return solveUnique(env.board) === null
      ? null
      : `Shortest solution: ${plural(empty, 'placement')} (unique)`;
  }
  if (env instanceof FrozenLakeEnv) {
    const length = lakeDistanceToGoal(env);
    return length === null ? null : `Shortest path without slips: ${plural(length, 'action')}`;
  }
  return null;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** Breadth-first search over non-hole cells from the player to G (gymnasium's moves, no slip). */
function lakeDistanceToGoal(env: FrozenLakeEnv): number | null {
  const { map } = env;
  const goal = findTiles(map, 'G')[0];
  const key = (p: Position) => p.row * map.cols + p.col;
  const distance = new Map<number, number>([[key(env.player), 0]]);
  const queue: Position[] = [env.player];
  for (let at = 0; at < queue.length; at++) {
    const here = queue[at] as Position;
    const steps = distance.get(key(here)) as number;
    if (goal && here.row === goal.row && here.col === goal.col) return steps;
    if (tileAt(map, here) === 'H') continue;
    for (const direction of [0, 1, 2, 3] as GymDirection[]) {
      const next = moveOnLake(map, here, direction);
      if (tileAt(map, next) === 'H' || distance.has(key(next))) continue;
      distance.set(key(next), steps + 1);
      queue.push(next);
    }
  }
  return null;
}

/** The text `spa env show` prints: render, a blank line, the description, the hint if any. */
export function showText(env: Environment): string {
  const hint = solutionHint(env);
  return `${env.render()}\n\n${env.describe()}\n${hint === null ? '' : `${hint}\n`}`;
}
