import { FrozenLakeEnv } from '../envs/frozenlake/frozenlake-env.js';
import { SokobanEnv } from '../envs/sokoban/sokoban-env.js';
import { solveSokoban } from '../envs/sokoban/solver.js';
import { solveUnique } from '../envs/sudoku/solver.js';
import { SudokuEnv } from '../envs/sudoku/sudoku-env.js';
import type { Environment } from '../envs/types.js';

/**
 * A shortest plan (action strings) from the env's current state, or null when none is found.
 * Sokoban: push-aware BFS. FrozenLake: BFS on the map with slips ignored (the slip is drawn by
 * the env, so the plan is the best intended path). Sudoku: the unique solution's moves.
 */
export function planShortest(env: Environment): string[] | null {
  if (env instanceof SokobanEnv) return solveSokoban(env.snapshot());
  if (env instanceof FrozenLakeEnv) return planLake(env);
  if (env instanceof SudokuEnv) return planSudoku(env);
  throw new Error(`oracle: no planner for env "${env.name}"`);
}

/** The env as it would be without slips: what the oracle predicts when it writes `<prediction>`. */
export function deterministicCopy(env: Environment): Environment {
  return env instanceof FrozenLakeEnv
    ? FrozenLakeEnv.fromRender(env.render(), { slippery: false })
    : env.clone();
}

function planLake(env: FrozenLakeEnv): string[] | null {
  const names = env.actionNames ?? [];
  const start = deterministicCopy(env);
  const seen = new Set([start.render()]);
  let frontier: { env: Environment; plan: string[] }[] = [{ env: start, plan: [] }];
  while (frontier.length > 0) {
    const next: typeof frontier = [];
    for (const node of frontier) {
      for (let id = 1; id <= names.length; id++) {
        const child = node.env.clone();
        const outcome = child.step(id);
        const plan = [...node.plan, names[id - 1]!];
        if (outcome.success) return plan;
        const key = child.render();
        if (outcome.done || seen.has(key)) continue;
        seen.add(key);
        next.push({ env: child, plan });
      }
    }
    frontier = next;
  }
  return null;
}

function planSudoku(env: SudokuEnv): string[] | null {
  const board = env.board;
  const solution = solveUnique(board);
  if (!solution) return null;
  const moves: string[] = [];
  board.forEach((row, r) =>
    row.forEach((cell, c) => {
      if (cell === 0) moves.push(`${r + 1},${c + 1},${solution[r]![c]!}`);
    }),
  );
  return moves;
}
