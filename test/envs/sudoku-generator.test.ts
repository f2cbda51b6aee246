import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cluesFor, generateSudoku } from '../../envs/sudoku/generator.js';
import { countSolutions, findSolutions } from '../../envs/sudoku/solver.js';
import { SudokuEnv } from '../../envs/sudoku/sudoku-env.js';
import { emptyCells, isGridSolved, type SudokuGrid } from '../../envs/sudoku/sudoku-grid.js';
import { parseSudokuRender, renderSudoku } from '../../envs/sudoku/sudoku-render.js';
import { SUDOKU_HARD, SUDOKU_MEDIUM, SUDOKU_VARIANTS } from '../../envs/sudoku/variants.js';

const seeds = fc.integer({ min: 0, max: 2 ** 31 - 1 });
const filled = (grid: SudokuGrid): number => grid.flat().filter((v) => v !== 0).length;

describe('Sudoku generator (docs/spa-envs.md#sudoku)', () => {
  it('easy 4×4: a valid full solution, exactly 6 empties, clues agree, unique solution', () => {
    fc.assert(
      fc.property(seeds, (seed) => {
        const { puzzle, solution } = generateSudoku({ size: 4, difficulty: 'easy' }, seed);
        expect(isGridSolved(solution)).toBe(true);
        expect(emptyCells(puzzle)).toHaveLength(6);
        puzzle.forEach((row, r) =>
          row.forEach((v, c) => {
            if (v !== 0) expect(v).toBe(solution[r]?.[c]);
          }),
        );
        expect(findSolutions(puzzle, 2)).toEqual([solution]);
      }),
      { numRuns: 150 },
    );
  });

  it('same seed ⇒ same puzzle; consecutive seeds differ', () => {
    fc.assert(
      fc.property(seeds, (seed) => {
        const a = generateSudoku({ size: 4, difficulty: 'easy' }, seed);
        expect(generateSudoku({ size: 4, difficulty: 'easy' }, seed)).toEqual(a);
      }),
      { numRuns: 50 },
    );
    const renders = Array.from({ length: 128 }, (_, i) =>
      renderSudoku(generateSudoku({ size: 4, difficulty: 'easy' }, 10000 + i).puzzle),
    );
    expect(new Set(renders).size).toBeGreaterThan(120);
  });

  it('medium and hard keep a unique solution and never fewer clues than the target', () => {
    fc.assert(
      fc.property(seeds, fc.constantFrom(SUDOKU_MEDIUM, SUDOKU_HARD), (seed, config) => {
        const { puzzle } = generateSudoku(config, seed);
        expect(countSolutions(puzzle)).toBe(1);
        expect(filled(puzzle)).toBeGreaterThanOrEqual(cluesFor(4, config.difficulty));
      }),
      { numRuns: 60 },
    );
    // Medium (9 clues) is almost always reachable on 4×4.
    const medium = Array.from({ length: 40 }, (_, i) => filled(generateSudoku(SUDOKU_MEDIUM, i).puzzle));
    expect(medium.filter((n) => n === 9).length).toBeGreaterThan(30);
  });

  it('uses RAGEN clue counts', () => {
    expect([cluesFor(4, 'easy'), cluesFor(4, 'medium'), cluesFor(4, 'hard')]).toEqual([10, 9, 6]);
    expect([cluesFor(9, 'easy'), cluesFor(9, 'medium'), cluesFor(9, 'hard')]).toEqual([36, 30, 24]);
    expect(cluesFor(16, 'easy')).toBe(128);
    expect(Object.keys(SUDOKU_VARIANTS)).toEqual(['easy', 'medium', 'hard']);
  });

  it('generates a uniquely solvable 9×9 too (size is a parameter)', () => {
    const { puzzle, solution } = generateSudoku({ size: 9, difficulty: 'easy' }, 42);
    expect(isGridSolved(solution)).toBe(true);
    expect(countSolutions(puzzle)).toBe(1);
    expect(filled(puzzle)).toBeGreaterThanOrEqual(36);
  });
});

describe('Sudoku env reset and render round-trip', () => {
  it('reset(seed) loads the generated puzzle, exposes its solution, and fromPuzzle(render) round-trips', () => {
    fc.assert(
      fc.property(seeds, (seed) => {
        const env = new SudokuEnv();
        env.reset(seed);
        const { puzzle, solution } = generateSudoku({ size: 4, difficulty: 'easy' }, seed);
        expect(env.clues).toEqual(puzzle);
        expect(env.solution).toEqual(solution);
        expect(env.steps).toBe(0);
        const copy = SudokuEnv.fromPuzzle(env.render());
        expect(copy.render()).toBe(env.render());
        expect(copy.state()).toBe(env.state());
        expect(parseSudokuRender(env.render())).toEqual(puzzle);
      }),
      { numRuns: 50 },
    );
  });
});
