import { describe, expect, it } from 'vitest';
import { parseSudokuAction } from '../../envs/sudoku/action-parser.js';
import { SudokuEnv } from '../../envs/sudoku/sudoku-env.js';

// docs/spa-testvectors.md#puzzles: seed 123's puzzle and solution.
const PUZZLE_123 = '| 3 2 4 1 | . 4 . . | 2 . 3 . | 4 3 . 2 ';
const SOLUTION_123 = [
  [3, 2, 4, 1],
  [1, 4, 2, 3],
  [2, 1, 3, 4],
  [4, 3, 1, 2],
];

describe('Sudoku step vectors (docs/spa-testvectors.md#sudoku, seed 123, in order)', () => {
  const env = SudokuEnv.fromPuzzle(PUZZLE_123);
  const unchanged = (before: string): void => expect(env.render()).toBe(before);
  const step = (action: string, expected: { valid: boolean; effective: boolean }): void => {
    expect(env.step(action)).toEqual({ reward: 0.0, done: false, success: false, ...expected });
  };

  it('"1,1,1": clue cell ⇒ invalid, unchanged', () => {
    step('1,1,1', { valid: false, effective: false });
    unchanged(PUZZLE_123);
  });
  it('"2,1,1": writes', () => {
    step('2,1,1', { valid: true, effective: true });
    expect(env.state()).toBe(
      '| 3 2 4 1 | 1 4 . . | 2 . 3 . | 4 3 . 2 \nEmpty positions to be filled are at (2,3), (2,4), (3,2), (3,4), (4,3).',
    );
  });
  const after = '| 3 2 4 1 | 1 4 . . | 2 . 3 . | 4 3 . 2 ';
  it('"place 3 at row 2 col 1": valid, but 3 is already in column 1', () => {
    step('place 3 at row 2 col 1', { valid: true, effective: false });
    unchanged(after);
  });
  it('"5,1,1": row out of range ⇒ invalid', () => {
    step('5,1,1', { valid: false, effective: false });
    unchanged(after);
  });
  it('"r1c1=2": unparseable ⇒ invalid', () => {
    step('r1c1=2', { valid: false, effective: false });
    unchanged(after);
  });
  it('"2 1 2": (2,1) is no clue so valid; 2 is in column 1 ⇒ not effective', () => {
    step('2 1 2', { valid: true, effective: false });
    unchanged(after);
  });
  it('filling the remaining empties with the solution ends with reward 1.0', () => {
    const moves = ['2,3,2', '2,4,3', '3,2,1', '3,4,4', '4,3,1'];
    const outcomes = moves.map((m) => env.step(m));
    for (const o of outcomes.slice(0, -1)) {
      expect(o).toEqual({ reward: 0.0, done: false, success: false, valid: true, effective: true });
    }
    expect(outcomes.at(-1)).toEqual({ reward: 1.0, done: true, success: true, valid: true, effective: true });
    expect(env.state()).toBe(
      '| 3 2 4 1 | 1 4 2 3 | 2 1 3 4 | 4 3 1 2 \nNo empty positions found (board might be complete).',
    );
    expect(env.board).toEqual(SOLUTION_123);
    expect(env.isDone()).toBe(true);
    expect(env.steps).toBe(11);
  });
});

describe('Sudoku step rules', () => {
  it('overwrites a filled non-clue cell when the new value fits', () => {
    const env = SudokuEnv.fromPuzzle('| 1 . . . | . . . . | . . . . | . . . . ');
    expect(env.step('1,2,2')).toMatchObject({ valid: true, effective: true });
    expect(env.step('1,2,3')).toMatchObject({ valid: true, effective: true });
    expect(env.board[0]).toEqual([1, 3, 0, 0]);
    // Re-writing the same value counts the cell itself: not effective (RAGEN _is_valid_move).
    expect(env.step('1,2,3')).toMatchObject({ valid: true, effective: false });
    expect(env.step('1,2,1')).toMatchObject({ valid: true, effective: false });
  });

  it('rejects values outside 1..4 and zero/negative coordinates as invalid', () => {
    const env = SudokuEnv.fromPuzzle(PUZZLE_123);
    for (const action of ['2,1,5', '2,1,0', '0,1,1', '-1,1,1', '2,5,1', '', '1,2']) {
      expect(env.step(action), action).toMatchObject({ valid: false, effective: false });
    }
  });

  it('is done at max_steps (30) without success, counting every call', () => {
    const env = SudokuEnv.fromPuzzle(PUZZLE_123);
    const outcomes = Array.from({ length: 30 }, () => env.step('nonsense'));
    expect(outcomes.slice(0, 29).every((o) => !o.done)).toBe(true);
    expect(outcomes[29]).toEqual({ reward: 0.0, done: true, success: false, valid: false, effective: false });
    expect(env.isDone()).toBe(true);
  });

  it('steps once per character for the fallback-string bug (docs/spa-testvectors.md#parser)', () => {
    const env = SudokuEnv.fromPuzzle(PUZZLE_123);
    const outcomes = Array.from('2,1,1 || 2,3,2').map((ch) => env.step(env.lookupAction(ch) as string));
    expect(outcomes).toHaveLength(14);
    expect(outcomes.every((o) => !o.valid)).toBe(true);
    expect(env.steps).toBe(14);
    expect(env.render()).toBe(PUZZLE_123);
  });

  it('passes every action string through lookupAction and has no vocabularies', () => {
    const env = new SudokuEnv();
    expect(env.lookupAction('Anything At All')).toBe('Anything At All');
    expect(env.actionNames).toBeNull();
    expect(env.gridVocabulary).toBeNull();
    expect(env.rewardIsFloat).toBe(true);
  });

  it('clone is independent', () => {
    const env = SudokuEnv.fromPuzzle(PUZZLE_123);
    const copy = env.clone();
    copy.step('2,1,1');
    expect(env.render()).toBe(PUZZLE_123);
    expect(env.steps).toBe(0);
    expect(copy.steps).toBe(1);
  });
});

describe('Sudoku describe wording (docs/spa-envs.md#sudoku)', () => {
  it('uses singular, plural and none forms', () => {
    expect(SudokuEnv.fromPuzzle('| 3 2 4 1 | 1 4 2 3 | 2 1 3 4 | 4 3 . 2 ').describe()).toBe(
      'Empty position to be filled is at (4,3).',
    );
    expect(SudokuEnv.fromPuzzle(PUZZLE_123).describe()).toBe(
      'Empty positions to be filled are at (2,1), (2,3), (2,4), (3,2), (3,4), (4,3).',
    );
  });

  it('fromPuzzle with a board keeps the puzzle clues fixed', () => {
    const env = SudokuEnv.fromPuzzle(PUZZLE_123, '| 3 2 4 1 | 1 4 . . | 2 . 3 . | 4 3 . 2 ');
    expect(env.step('2,1,1')).toMatchObject({ valid: true, effective: false });
    expect(env.step('1,1,3')).toMatchObject({ valid: false });
    expect(() => SudokuEnv.fromPuzzle(PUZZLE_123, '| 1 2 4 3 | . 4 . . | 2 . 3 . | 4 3 . 2 ')).toThrow(
      /cell \(1,1\) is 1 but the puzzle's clue there is 3/,
    );
  });

  it('rejects malformed renders naming the problem', () => {
    expect(() => SudokuEnv.fromPuzzle('| 1 2 3 | 4 5 6 | 7 8 9 ')).toThrow(/perfect square/);
    expect(() => SudokuEnv.fromPuzzle('| 1 2 3 4 | . . | . . . . | . . . . ')).toThrow(
      /row 2 .*expected 4 cells/,
    );
    expect(() => SudokuEnv.fromPuzzle('| 1 2 3 x | . . . . | . . . . | . . . . ')).toThrow(/cell "x"/);
    expect(() => new SudokuEnv().render()).toThrow(/call reset\(seed\)/);
    expect(() => SudokuEnv.fromPuzzle(PUZZLE_123).step(3)).toThrow(/must be a string/);
  });
});

describe('parseSudokuAction (RAGEN _parse_action)', () => {
  const cases: [string, { row: number; col: number; value: number } | null][] = [
    ['1,2,3', { row: 0, col: 1, value: 3 }],
    ['1 2 3', { row: 0, col: 1, value: 3 }],
    [' 1 , 2 , 3 ', { row: 0, col: 1, value: 3 }],
    ['1,2,3,4', { row: 0, col: 1, value: 3 }],
    ['-1,2,3', { row: -2, col: 1, value: 3 }],
    ['--1,2,3', null],
    ['+1,2,3', null],
    ['1,2', null],
    ['r1c1=2', null],
    ['place 3 at row 2 col 1', { row: 1, col: 0, value: 3 }],
    ['ROW 2, COL 1, 4', { row: 1, col: 0, value: 4 }],
    ['row 2 col 1: 4', null], // Python int('1:') raises
    ['row 2 col 1', null], // no value token
    ['row2 col1 3', null], // no whole `row` token: Python raises, no fallback
    ['1 2 3 row', { row: 0, col: 1, value: 3 }], // `col` missing → r,c,v branch
    ['row 4 col +2 value 1', { row: 3, col: 1, value: 1 }],
    ['3 at row', null],
  ];
  it.each(cases)('%j', (text, expected) => {
    expect(parseSudokuAction(text)).toEqual(expected);
  });
});
