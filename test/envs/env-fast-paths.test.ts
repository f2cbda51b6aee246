/**
 * The envs' hot paths (per-map render tables, render/describe caches, incremental counters, the
 * Sudoku parse fast path, the FrozenLake slip sampled without outcome lists) against the plain
 * definitions they replace, over the paper's puzzles and random play.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FrozenLakeEnv } from '../../envs/frozenlake/frozenlake-env.js';
import { findTiles, lakeDesc, parseLakeDesc, type LakeMap } from '../../envs/frozenlake/lake-map.js';
import { describeLake, renderLake } from '../../envs/frozenlake/lake-render.js';
import { LakeView } from '../../envs/frozenlake/lake-view.js';
import { sampleOutcomeIndex, type LakeOutcome } from '../../envs/frozenlake/transitions.js';
import { Rng } from '../../envs/rng.js';
import { spaPuzzles } from '../../envs/puzzles.js';
import { Cell, describeRoom, renderRoom, type SokobanRoom } from '../../envs/sokoban/room.js';
import { SokobanEnv } from '../../envs/sokoban/sokoban-env.js';
import { parseSudokuAction, parseSudokuActionTokens } from '../../envs/sudoku/action-parser.js';
import { SudokuEnv } from '../../envs/sudoku/sudoku-env.js';
import { isGridSolved } from '../../envs/sudoku/sudoku-grid.js';
import { describeSudoku, renderSudoku } from '../../envs/sudoku/sudoku-render.js';

const lakeMaps = (): [number, LakeMap][] =>
  [...spaPuzzles('frozenlake').values()].map((p) => [p.seed, parseLakeDesc(p.desc ?? [])]);

describe('FrozenLake view tables = renderLake / describeLake', () => {
  it('every cell of every SPA map renders and describes identically', () => {
    const actual: string[] = [];
    const wanted: string[] = [];
    for (const [seed, map] of lakeMaps()) {
      const view = new LakeView(map);
      for (let cell = 0; cell < map.rows * map.cols; cell++) {
        const player = { row: Math.floor(cell / map.cols), col: cell % map.cols };
        actual.push(`${seed}/${cell}: ${view.render(cell)}\n${view.describe(cell)}`);
        wanted.push(`${seed}/${cell}: ${renderLake(map, player)}\n${describeLake(map, player)}`);
      }
    }
    expect(actual).toHaveLength(384 * 16);
    expect(actual).toEqual(wanted);
  });

  it('a 6×6 map without holes too', () => {
    const map = parseLakeDesc(['SFFFFF', 'FFFFFF', 'FFFFFF', 'FFFFFF', 'FFFFFF', 'FFFFFG']);
    const view = new LakeView(map);
    expect(view.render(35)).toBe(renderLake(map, { row: 5, col: 5 }));
    expect(view.describe(7)).toBe(describeLake(map, { row: 1, col: 1 }));
  });
});

describe('FrozenLake step = outcomes(action)[sampleOutcomeIndex(p, u)] with the same draws', () => {
  it('random play on every SPA map follows the enumerated outcomes draw by draw', () => {
    const actions = new Rng(7);
    const actual: unknown[] = [];
    const wanted: unknown[] = [];
    let slips = 0;
    for (const [seed, map] of lakeMaps()) {
      const env = FrozenLakeEnv.fromDesc(lakeDesc(map), { slipSeed: seed });
      const draws = new Rng(seed);
      draws.float(); // the draw gymnasium's reset consumes
      for (let t = 0; t < 12; t++) {
        const action = actions.int(1, 4);
        const outcomes = env.outcomes(action);
        const index = sampleOutcomeIndex(
          outcomes.map((o) => o.probability),
          draws.float(),
        );
        const chosen = outcomes[index] as LakeOutcome;
        if (outcomes.length === 3 && index !== 1) slips++;
        const before = env.player;
        const step = env.step(action);
        const moved = before.row !== chosen.next.row || before.col !== chosen.next.col;
        const onGoal = findTiles(map, 'G').some(
          (g) => g.row === chosen.next.row && g.col === chosen.next.col,
        );
        actual.push([env.player, step, env.state()]);
        wanted.push([
          chosen.next,
          { reward: chosen.reward, done: chosen.terminal, success: onGoal, effective: moved, valid: true },
          `${renderLake(map, chosen.next)}\n${describeLake(map, chosen.next)}`,
        ]);
      }
    }
    expect(actual).toEqual(wanted);
    expect(slips).toBeGreaterThan(100);
  });

  it('a clone shares nothing mutable: stepping it leaves the original render as it was', () => {
    const env = FrozenLakeEnv.fromDesc(['SFFF', 'FFFF', 'FFFF', 'FFFG'], { slippery: false });
    const before = env.render();
    const copy = env.clone();
    copy.step(3); // Right, not slippery: the player moves
    expect(copy.render()).not.toBe(before);
    expect(env.render()).toBe(before);
  });
});

function boxesOnTarget(room: SokobanRoom): number {
  return room.state.filter((code) => code === Cell.boxOnTarget).length;
}

describe('Sokoban cached texts and incremental boxes-on-target = full recomputation', () => {
  it('random play on every SPA puzzle', () => {
    const rng = new Rng(11);
    let pushesOnOrOff = 0;
    const actual: unknown[] = [];
    const wanted: unknown[] = [];
    for (const puzzle of spaPuzzles('sokoban').values()) {
      const env = SokobanEnv.fromRender(puzzle.render ?? '');
      for (let t = 0; t < 40 && !env.isDone(); t++) {
        const onBefore = boxesOnTarget(env.snapshot());
        const { reward, success } = env.step(rng.int(1, 4));
        const room = env.snapshot();
        const onAfter = boxesOnTarget(room);
        if (onAfter !== onBefore) pushesOnOrOff++;
        // gym's _calc_reward over a full count (docs/spa-envs.md#sokoban), in gym's summation order.
        let expected = -0.1;
        if (onAfter > onBefore) expected += 1;
        else if (onAfter < onBefore) expected += -1;
        if (onAfter === 1) expected += 10;
        actual.push([reward, success, env.render(), env.describe()]);
        wanted.push([expected, onAfter === 1, renderRoom(room), describeRoom(room)]);
      }
    }
    // One comparison at the end: an expect per step would dominate the test's run time.
    expect(actual).toEqual(wanted);
    expect(pushesOnOrOff).toBeGreaterThan(0);
  });

  it('2-box boards: a box pushed off its target, and the last box pushed on', () => {
    const off = SokobanEnv.fromRender('#######\n#P√_XO#\n#######');
    expect(off.step(4)).toEqual({
      reward: -0.1 + -1,
      done: false,
      success: false,
      effective: true,
      valid: true,
    });
    expect(off.render()).toBe('#######\n#_SXXO#\n#######');
    const on = SokobanEnv.fromRender('#######\n#P_X_O#\n#___√_#\n#######');
    expect([4, 4, 4].map((a) => on.step(a).reward)).toEqual([-0.1, -0.1, -0.1 + 1 + 10]);
    expect(on.isDone()).toBe(true);
    expect(on.render()).toBe('#######\n#___P√#\n#___√_#\n#######');
  });
});

describe('Sudoku parse fast path = the token-by-token parser', () => {
  const plain = fc.stringMatching(/^[0-9, ]{0,12}$/);
  const anything = fc.string({ maxLength: 16 });
  const mixed = fc
    .array(fc.constantFrom('1', '2', '9', '0', ',', ' ', '\t', '-', '+', '_', 'row', 'col', 'x'), {
      maxLength: 10,
    })
    .map((parts) => parts.join(''));

  it.each([
    ['digits, commas and spaces', plain],
    ['any string', anything],
    ['near misses', mixed],
  ])('%s', (_name, strings) => {
    fc.assert(
      fc.property(strings, (text) => {
        expect(parseSudokuAction(text)).toEqual(parseSudokuActionTokens(text));
      }),
      { numRuns: 2000 },
    );
  });

  it('long digit runs and edge shapes', () => {
    for (const text of [
      '1234567890123456,1,1',
      '007,01,3',
      ',,1,,2,,3,,',
      '1 2',
      '',
      ' ',
      '1,2,3,4',
      '0,0,0',
    ]) {
      expect(parseSudokuAction(text), text).toEqual(parseSudokuActionTokens(text));
    }
  });
});

describe('Sudoku counters and caches = full recomputation', () => {
  it('random play on every SPA puzzle', () => {
    const rng = new Rng(5);
    let solved = 0;
    const actual: unknown[] = [];
    const wanted: unknown[] = [];
    for (const puzzle of spaPuzzles('sudoku').values()) {
      const env = SudokuEnv.fromPuzzle(puzzle.puzzle ?? '');
      const solution = (puzzle.solution ?? '').replace(/[|]/g, ' ').trim().split(/\s+/);
      for (let t = 0; t < 30 && !env.isDone(); t++) {
        // Half the moves write the solution's digit, so some boards get solved.
        const r = rng.int(1, 4);
        const c = rng.int(1, 4);
        const v = rng.chance(0.5) ? Number(solution[(r - 1) * 4 + (c - 1)]) : rng.int(1, 4);
        const { success } = env.step(`${r},${c},${v}`);
        const board = env.board;
        actual.push([success, env.isSolved(), env.render(), env.describe()]);
        wanted.push([isGridSolved(board), isGridSolved(board), renderSudoku(board), describeSudoku(board)]);
        if (success) solved++;
      }
    }
    expect(actual).toEqual(wanted);
    expect(solved).toBeGreaterThan(0);
  });

  it('a board loaded with a conflict is checked in full, not by counting empties', () => {
    const puzzle = '| 3 2 4 1 | . 4 2 3 | 2 1 3 4 | 4 3 1 2 ';
    // Complete but row 2 holds 4 twice: not solved.
    const env = SudokuEnv.fromPuzzle(puzzle, '| 3 2 4 1 | 4 4 2 3 | 2 1 3 4 | 4 3 1 2 ');
    expect(env.isSolved()).toBe(false);
    expect(env.step('2,1,1')).toEqual({
      reward: 1.0,
      done: true,
      success: true,
      effective: true,
      valid: true,
    });
  });
});
