import { describe, expect, it } from 'vitest';
import { ENV_NAMES, spaEnv } from '../../envs/registry.js';
import { boardGrid, differingCells, firstSpan } from '../../web/server/board-grid.js';

// docs/spa-testvectors.md#sokoban-episode: the model's wrong prediction and the true state after Left, Up.
const predicted = '######\n#O####\n#X_###\n#_P###\n#___##\n######';
const truth =
  '######\n#O####\n#X_###\n#P_###\n#___##\n######\nPlayer (P) is at (3,1); box (X) is at (2,1); target (O) is at (1,1).';

describe('boardGrid', () => {
  it('splits a Sokoban state into one cell per character and keeps the coordinate sentence', () => {
    const grid = boardGrid(truth);
    expect(grid.rows).toHaveLength(6);
    expect(grid.rows[3]).toEqual(['#', 'P', '_', '#', '#', '#']);
    expect(grid.caption).toBe('Player (P) is at (3,1); box (X) is at (2,1); target (O) is at (1,1).');
  });

  it('splits a Sudoku state into rows at | and cells at spaces (docs/spa-testvectors.md#sudoku-episode)', () => {
    const grid = boardGrid(
      '| . 1 2 4 | 4 2 1 3 | 2 3 4 1 | . 4 . 2 \nEmpty positions to be filled are at (1,1), (4,1), (4,3).',
    );
    expect(grid.rows).toEqual([
      ['.', '1', '2', '4'],
      ['4', '2', '1', '3'],
      ['2', '3', '4', '1'],
      ['.', '4', '.', '2'],
    ]);
    expect(grid.caption).toBe('Empty positions to be filled are at (1,1), (4,1), (4,3).');
  });

  it.each(ENV_NAMES)('gives back every row of a real %s render', (name) => {
    const env = spaEnv(name, 10000);
    const grid = boardGrid(env.state());
    const rendered = env.render();
    const rows = rendered.startsWith('|')
      ? rendered
          .split('|')
          .map((s) => s.trim().split(/\s+/).join(''))
          .filter(Boolean)
      : rendered.split('\n');
    expect(grid.rows.map((r) => r.join(''))).toEqual(rows);
    expect(grid.caption).toBe(env.state().slice(rendered.length).trim());
  });
});

describe('differingCells', () => {
  it('marks the cells where a belief differs from the true board', () => {
    expect(differingCells(boardGrid(predicted), boardGrid(truth))).toEqual([
      [3, 1],
      [3, 2],
    ]);
    expect(differingCells(boardGrid(truth), boardGrid(truth))).toEqual([]);
  });

  it('counts missing cells as different and ignores an empty belief', () => {
    expect(differingCells(boardGrid('ab\nc'), boardGrid('ab\ncd'))).toEqual([[1, 1]]);
    expect(differingCells(boardGrid(''), boardGrid(truth))).toEqual([]);
  });
});

describe('firstSpan', () => {
  it('reads the first span of a tag across lines, or null', () => {
    expect(
      firstSpan('<think> <observation>a\nb </observation><observation>c</observation>', 'observation'),
    ).toBe('a\nb');
    expect(firstSpan('<answer>Up</answer>', 'prediction')).toBeNull();
  });
});
