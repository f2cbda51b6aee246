import { describe, expect, it } from 'vitest';
import { FrozenLakeEnv } from '../../envs/frozenlake/frozenlake-env.js';
import { renderLake } from '../../envs/frozenlake/lake-render.js';
import { lakeOutcomes, type GymDirection, type LakeOutcome } from '../../envs/frozenlake/transitions.js';
import type { Position } from '../../envs/types.js';

// docs/spa-testvectors.md#frozenlake: the rule-check map.
const MAP = ['SHFF', 'FFFH', 'FHFF', 'HFFG'];
const LEFT = 1;
const DOWN = 2;
const RIGHT = 3;
const UP = 4;

/** MAP with the start moved to `start`. */
function withStart(desc: readonly string[], start: Position): string[] {
  return desc.map((row, r) =>
    Array.from(row)
      .map((tile, c) => (r === start.row && c === start.col ? 'S' : tile === 'S' ? 'F' : tile))
      .join(''),
  );
}

describe('FrozenLake deterministic rules (docs/spa-testvectors.md#frozenlake, is_slippery=False)', () => {
  const table: [Position, number, Position, number, boolean, boolean, string][] = [
    [{ row: 0, col: 0 }, LEFT, { row: 0, col: 0 }, 0, false, false, 'PO__\n___O\n_O__\nO__G'],
    [{ row: 0, col: 0 }, DOWN, { row: 1, col: 0 }, 0, false, false, '_O__\nP__O\n_O__\nO__G'],
    [{ row: 0, col: 0 }, RIGHT, { row: 0, col: 1 }, 0, true, false, '_X__\n___O\n_O__\nO__G'],
    [{ row: 2, col: 2 }, RIGHT, { row: 2, col: 3 }, 0, false, false, '_O__\n___O\n_O_P\nO__G'],
    [{ row: 2, col: 3 }, DOWN, { row: 3, col: 3 }, 1, true, true, '_O__\n___O\n_O__\nO__√'],
    [{ row: 1, col: 2 }, RIGHT, { row: 1, col: 3 }, 0, true, false, '_O__\n___X\n_O__\nO__G'],
  ];
  it.each(table)('from %j action %i', (start, action, next, reward, done, success, render) => {
    const env = FrozenLakeEnv.fromDesc(withStart(MAP, start), { slippery: false });
    const outcome = env.step(action);
    expect(env.player).toEqual(next);
    expect(outcome).toEqual({
      reward,
      done,
      success,
      effective: next.row !== start.row || next.col !== start.col,
      valid: true,
    });
    expect(env.render()).toBe(render);
    expect(env.isDone()).toBe(done);
  });

  it('reports integer rewards (gymnasium ≥ 1.1, docs/spa-prompts.md#reward-text)', () => {
    const env = FrozenLakeEnv.fromDesc(withStart(MAP, { row: 2, col: 3 }), { slippery: false });
    expect(env.rewardIsFloat).toBe(false);
    expect(Number.isInteger(env.step(DOWN).reward)).toBe(true);
  });

  it('stays put with reward 0 once terminal (gymnasium self-loop)', () => {
    const env = FrozenLakeEnv.fromDesc(MAP, { slippery: false });
    env.step(RIGHT);
    expect(env.step(DOWN)).toEqual({ reward: 0, done: true, success: false, effective: false, valid: true });
    expect(env.player).toEqual({ row: 0, col: 1 });
  });
});

describe('FrozenLake slippery outcomes (docs/spa-testvectors.md#frozenlake)', () => {
  const cases: [Position, number, [Position, boolean][]][] = [
    [
      { row: 1, col: 1 },
      UP,
      [
        [{ row: 1, col: 2 }, false],
        [{ row: 0, col: 1 }, true],
        [{ row: 1, col: 0 }, false],
      ],
    ],
    [
      { row: 0, col: 0 },
      LEFT,
      [
        [{ row: 0, col: 0 }, false],
        [{ row: 0, col: 0 }, false],
        [{ row: 1, col: 0 }, false],
      ],
    ],
    [
      { row: 2, col: 2 },
      RIGHT,
      [
        [{ row: 3, col: 2 }, false],
        [{ row: 2, col: 3 }, false],
        [{ row: 1, col: 2 }, false],
      ],
    ],
  ];

  it.each(cases)('from %j action %i enumerates three outcomes of 1/3', (start, action, expected) => {
    const env = FrozenLakeEnv.fromDesc(withStart(MAP, start));
    const outcomes = env.outcomes(action);
    expect(outcomes.map((o) => [o.next, o.terminal])).toEqual(expected);
    for (const o of outcomes) expect(o.probability).toBeCloseTo(1 / 3, 12);
    expect(outcomes.reduce((sum, o) => sum + o.probability, 0)).toBeCloseTo(1, 12);
    // Order is gymnasium's: (a−1)%4, a, (a+1)%4 as gymnasium directions.
    const intended = action - 1;
    expect(outcomes.map((o) => o.direction)).toEqual([(intended + 3) % 4, intended, (intended + 1) % 4]);
  });

  it('samples each direction about 1/3 of the time over many seeded draws', () => {
    const draws = 6000;
    const counts = new Map<string, number>();
    for (let seed = 0; seed < draws; seed++) {
      const env = FrozenLakeEnv.fromDesc(withStart(MAP, { row: 1, col: 1 }), { slipSeed: seed });
      env.step(UP);
      const key = `${env.player.row},${env.player.col}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual(['0,1', '1,0', '1,2']);
    for (const count of counts.values()) expect(Math.abs(count / draws - 1 / 3)).toBeLessThan(0.03);
  });

  it('replays the same slips for the same slip seed, and a clone continues identically', () => {
    const run = (env: FrozenLakeEnv): Position[] =>
      [RIGHT, DOWN, DOWN, LEFT, RIGHT].map((a) => (env.isDone() ? env.player : (env.step(a), env.player)));
    const a = FrozenLakeEnv.fromDesc(MAP, { slipSeed: 7 });
    const b = FrozenLakeEnv.fromDesc(MAP, { slipSeed: 7 });
    expect(run(a)).toEqual(run(b));
    const original = FrozenLakeEnv.fromDesc(withStart(MAP, { row: 2, col: 2 }), { slipSeed: 3 });
    original.step(RIGHT);
    const copy = original.clone();
    expect(run(copy)).toEqual(run(original));
  });
});

describe('FrozenLake seeded trajectories are possible transitions (docs/spa-testvectors.md#frozenlake)', () => {
  // Exact replay needs gymnasium's PCG64 stream; here each listed move must be one of the
  // enumerated slip outcomes, and following the listed outcomes must give the listed renders.
  const trajectories: [string[], [number, Position][], string][] = [
    [
      ['FFFF', 'FFFF', 'FFFH', 'GSFF'],
      [
        [UP, { row: 2, col: 1 }],
        [LEFT, { row: 2, col: 0 }],
        [DOWN, { row: 2, col: 0 }],
        [RIGHT, { row: 3, col: 0 }],
      ],
      '____\n____\n___O\n√___',
    ],
    [
      ['FGFF', 'FFFH', 'SFHF', 'HFFF'],
      [
        [UP, { row: 1, col: 0 }],
        [LEFT, { row: 1, col: 0 }],
        [DOWN, { row: 2, col: 0 }],
        [RIGHT, { row: 3, col: 0 }],
      ],
      '_G__\n___O\n__O_\nX___',
    ],
    [
      ['FFFF', 'FHHS', 'GHFF', 'HFFF'],
      [
        [UP, { row: 1, col: 3 }],
        [LEFT, { row: 0, col: 3 }],
        [DOWN, { row: 0, col: 2 }],
        [RIGHT, { row: 1, col: 2 }],
      ],
      '____\n_OX_\nGO__\nO___',
    ],
    [
      ['FFFF', 'FFFF', 'FFFH', 'GSFF'],
      [
        [UP, { row: 2, col: 1 }],
        [LEFT, { row: 2, col: 0 }],
        [DOWN, { row: 2, col: 0 }],
      ],
      '____\n____\nP__O\nG___',
    ],
  ];

  it.each(trajectories)('map %j', (desc, moves, finalRender) => {
    const map = FrozenLakeEnv.fromDesc(desc).map;
    let player = FrozenLakeEnv.fromDesc(desc).player;
    let last: LakeOutcome | undefined;
    for (const [action, next] of moves) {
      last = lakeOutcomes(map, player, (action - 1) as GymDirection, true).find(
        (o) => o.next.row === next.row && o.next.col === next.col,
      );
      expect(last, `action ${action} from ${JSON.stringify(player)} → ${JSON.stringify(next)}`).toBeDefined();
      player = next;
    }
    expect(renderLake(map, player)).toBe(finalRender);
    expect(last?.reward).toBe(finalRender.includes('√') ? 1 : 0);
    expect(last?.terminal).toBe(/[√X]/.test(finalRender));
  });
});

describe('FrozenLake actions, text and construction', () => {
  it('looks actions up case-insensitively as whole strings (docs/spa-protocol.md#actions)', () => {
    const env = new FrozenLakeEnv();
    expect(['Left', 'down', 'RIGHT', 'uP'].map((a) => env.lookupAction(a))).toEqual([1, 2, 3, 4]);
    for (const bad of ['Move Up', 'Up.', 'U', ' Up', '']) expect(env.lookupAction(bad)).toBeUndefined();
    expect(env.actionNames).toEqual(['Left', 'Down', 'Right', 'Up']);
    expect(env.gridVocabulary).toBe(
      'P: player, _: empty, O: hole, G: goal, X: player in hole, √: player on goal',
    );
  });

  it('describes player, holes (row-major) and goal, zero-indexed', () => {
    const env = FrozenLakeEnv.fromDesc(['FFFF', 'FHHS', 'GHFF', 'HFFF']);
    expect(env.describe()).toBe(
      'Player (P) is at (1,3); hole (O) is at (1,1); hole (O) is at (1,2); hole (O) is at (2,1); hole (O) is at (3,0); goal (G) is at (2,0).',
    );
    expect(env.state()).toBe(`____\n_OOP\nGO__\nO___\n${env.describe()}`);
  });

  it('keeps hole and goal clauses when the player is on them, and omits holes when none', () => {
    const inHole = FrozenLakeEnv.fromRender('_X\nG_');
    expect(inHole.describe()).toBe('Player (P) is at (0,1); hole (O) is at (0,1); goal (G) is at (1,0).');
    expect(inHole.isDone()).toBe(true);
    const onGoal = FrozenLakeEnv.fromRender('__\n_√');
    expect(onGoal.describe()).toBe('Player (P) is at (1,1); goal (G) is at (1,1).');
    expect(onGoal.isSolved()).toBe(true);
  });

  it('rejects malformed maps, renders and actions with messages naming the problem', () => {
    expect(() => FrozenLakeEnv.fromDesc(['SFF', 'FG'])).toThrow(/row 1 has 2 cells, expected 3/);
    expect(() => FrozenLakeEnv.fromDesc(['SFFX', 'FFFG'])).toThrow(/unexpected tile "X"/);
    expect(() => FrozenLakeEnv.fromDesc(['FFFF', 'FFFG'])).toThrow(/exactly one S, found 0/);
    expect(() => FrozenLakeEnv.fromDesc(['SFFG', 'FFFG'])).toThrow(/exactly one goal G, found 2/);
    expect(() => FrozenLakeEnv.fromRender('P_\n_P\nG_')).toThrow(/exactly one player.*found 2/);
    expect(() => FrozenLakeEnv.fromRender('P#\nG_')).toThrow(/unexpected character "#"/);
    expect(() => FrozenLakeEnv.fromDesc(MAP).step(5)).toThrow(/id 1\.\.4/);
    expect(() => new FrozenLakeEnv().render()).toThrow(/call reset\(seed\)/);
  });
});
