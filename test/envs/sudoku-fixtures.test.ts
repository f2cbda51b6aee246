import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { findSolutions } from '../../envs/sudoku/solver.js';
import { SudokuEnv } from '../../envs/sudoku/sudoku-env.js';
import { emptyCells, isGridSolved } from '../../envs/sudoku/sudoku-grid.js';
import { parseSudokuRender, renderSudoku } from '../../envs/sudoku/sudoku-render.js';

interface SudokuPuzzle {
  seed: number;
  split: string;
  puzzle: string;
  solution: string;
}

const puzzles = readFileSync(new URL('../../envs/puzzles/sudoku-4x4.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter((line) => line.trim().length > 0)
  .map((line) => JSON.parse(line) as SudokuPuzzle);

describe('Sudoku reference puzzles (docs/spa-testvectors.md#puzzles, envs/puzzles/sudoku-4x4.jsonl)', () => {
  // docs/spa-testvectors.md#puzzles table (0 = empty).
  const table: [number, number[][], number[][]][] = [
    [
      10000,
      [
        [4, 0, 0, 3],
        [3, 1, 0, 0],
        [0, 4, 0, 2],
        [2, 3, 4, 1],
      ],
      [
        [4, 2, 1, 3],
        [3, 1, 2, 4],
        [1, 4, 3, 2],
        [2, 3, 4, 1],
      ],
    ],
    [
      10001,
      [
        [1, 0, 4, 2],
        [2, 4, 3, 1],
        [3, 0, 1, 0],
        [4, 0, 0, 0],
      ],
      [
        [1, 3, 4, 2],
        [2, 4, 3, 1],
        [3, 2, 1, 4],
        [4, 1, 2, 3],
      ],
    ],
    [
      10002,
      [
        [2, 0, 3, 4],
        [4, 3, 1, 0],
        [0, 4, 2, 3],
        [0, 0, 0, 1],
      ],
      [
        [2, 1, 3, 4],
        [4, 3, 1, 2],
        [1, 4, 2, 3],
        [3, 2, 4, 1],
      ],
    ],
    [
      123,
      [
        [3, 2, 4, 1],
        [0, 4, 0, 0],
        [2, 0, 3, 0],
        [4, 3, 0, 2],
      ],
      [
        [3, 2, 4, 1],
        [1, 4, 2, 3],
        [2, 1, 3, 4],
        [4, 3, 1, 2],
      ],
    ],
    [
      124,
      [
        [4, 2, 0, 0],
        [1, 3, 4, 2],
        [2, 0, 0, 4],
        [3, 0, 2, 0],
      ],
      [
        [4, 2, 1, 3],
        [1, 3, 4, 2],
        [2, 1, 3, 4],
        [3, 4, 2, 1],
      ],
    ],
    [
      125,
      [
        [0, 4, 2, 0],
        [3, 0, 4, 1],
        [4, 0, 1, 2],
        [2, 0, 0, 4],
      ],
      [
        [1, 4, 2, 3],
        [3, 2, 4, 1],
        [4, 3, 1, 2],
        [2, 1, 3, 4],
      ],
    ],
  ];
  it.each(table)('seed %i: the file holds the tabled puzzle and solution', (seed, puzzle, solution) => {
    const line = puzzles.find((p) => p.seed === seed);
    expect(line).toBeDefined();
    expect(parseSudokuRender(line?.puzzle ?? '')).toEqual(puzzle);
    expect(parseSudokuRender(line?.solution ?? '')).toEqual(solution);
    expect(renderSudoku(puzzle)).toBe(line?.puzzle);
  });

  it('shows seed 10000 with coordinates exactly as the reference', () => {
    const line = puzzles.find((p) => p.seed === 10000) as SudokuPuzzle;
    expect(SudokuEnv.fromPuzzle(line.puzzle).state()).toBe(
      '| 4 . . 3 | 3 1 . . | . 4 . 2 | 2 3 4 1 \nEmpty positions to be filled are at (1,2), (1,3), (2,3), (2,4), (3,1), (3,3).',
    );
  });

  it('for all 384 puzzles: render round-trips, 6 empties, our solver finds exactly the file solution', () => {
    expect(puzzles).toHaveLength(384);
    for (const { seed, puzzle, solution } of puzzles) {
      const grid = parseSudokuRender(puzzle);
      expect(renderSudoku(grid), `seed ${seed}`).toBe(puzzle);
      expect(emptyCells(grid), `seed ${seed}`).toHaveLength(6);
      const solutions = findSolutions(grid, 2);
      expect(solutions, `seed ${seed}`).toHaveLength(1);
      expect(renderSudoku(solutions[0] ?? []), `seed ${seed}`).toBe(solution);
      expect(isGridSolved(solutions[0] ?? []), `seed ${seed}`).toBe(true);
    }
  });

  it('playing the file solution into each env reaches reward 1.0 on the sixth move', () => {
    for (const { seed, puzzle, solution } of puzzles.slice(0, 32)) {
      const env = SudokuEnv.fromPuzzle(puzzle);
      const answer = parseSudokuRender(solution);
      const rewards = emptyCells(parseSudokuRender(puzzle)).map(
        ({ row, col }) => env.step(`${row + 1},${col + 1},${answer[row]?.[col]}`).reward,
      );
      expect(rewards, `seed ${seed}`).toEqual([0, 0, 0, 0, 0, 1]);
      expect(env.render()).toBe(solution);
    }
  });
});
