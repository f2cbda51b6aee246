import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SokobanEnv } from '../../envs/sokoban/sokoban-env.js';
import { parseRender, renderRoom } from '../../envs/sokoban/room.js';
import { solveSokoban } from '../../envs/sokoban/solver.js';

const grid = (rows: string) => rows.split('/').join('\n');

/** Apply action names in order; returns per-action outcomes. */
function play(env: SokobanEnv, names: readonly string[]) {
  return names.map((name) => {
    const id = env.lookupAction(name);
    if (typeof id !== 'number') throw new Error(`bad action ${name}`);
    return env.step(id);
  });
}

describe('SokobanEnv transitions (docs/spa-testvectors.md#sokoban)', () => {
  const start21 = grid('######/#___O#/#__X_#/###P_#/###__#/######');

  it('2.1 moves into empty floor', () => {
    const env = SokobanEnv.fromRender(start21);
    const [out] = play(env, ['Right']);
    expect(out).toEqual({ reward: -0.1, done: false, success: false, effective: true, valid: true });
    expect(env.render()).toBe(grid('######/#___O#/#__X_#/###_P#/###__#/######'));
  });

  it('2.2 pushes a box up', () => {
    const env = SokobanEnv.fromRender(start21);
    const [out] = play(env, ['Up']);
    expect(out?.reward).toBe(-0.1);
    expect(out?.effective).toBe(true);
    expect(env.render()).toBe(grid('######/#__XO#/#__P_#/###__#/###__#/######'));
    expect(env.describe()).toBe('Player (P) is at (2,3); box (X) is at (1,3); target (O) is at (1,4).');
  });

  it('2.3 walking into a wall changes nothing but still costs −0.1', () => {
    const env = SokobanEnv.fromRender(start21);
    const [out] = play(env, ['Left']);
    expect(out).toEqual({ reward: -0.1, done: false, success: false, effective: false, valid: true });
    expect(env.render()).toBe(start21);
    expect(env.numEnvSteps).toBe(1);
  });

  it('2.4 cannot push a box into a wall', () => {
    const start = grid('######/#__X_#/#__P_#/#____#/#O___#/######');
    const env = SokobanEnv.fromRender(start);
    const [out] = play(env, ['Up']);
    expect(out).toMatchObject({ reward: -0.1, effective: false, done: false });
    expect(env.render()).toBe(start);
  });

  it('2.5 pushing the box onto the target solves with 10.9', () => {
    const env = SokobanEnv.fromRender(grid('######/#____#/#_PXO#/#____#/#____#/######'));
    const [out] = play(env, ['Right']);
    expect(out).toEqual({ reward: 10.9, done: true, success: true, effective: true, valid: true });
    expect(env.render()).toBe(grid('######/#____#/#__P√#/#____#/#____#/######'));
    expect(env.describe()).toBe('Player (P) is at (2,3); box (X) is at (2,4); target (O) is at (2,4).');
    expect(env.isDone()).toBe(true);
  });

  it('2.6 player walks onto a target (S) and off again', () => {
    const env = SokobanEnv.fromRender(grid('######/#____#/#_PO_#/#__X_#/#____#/######'));
    const [first] = play(env, ['Right']);
    expect(first?.reward).toBe(-0.1);
    expect(env.render()).toBe(grid('######/#____#/#__S_#/#__X_#/#____#/######'));
    expect(env.describe()).toBe('Player (P) is at (2,3); box (X) is at (3,3); target (O) is at (2,3).');
    const [second] = play(env, ['Right']);
    expect(second?.reward).toBe(-0.1);
    expect(env.render()).toBe(grid('######/#____#/#__OP#/#__X_#/#____#/######'));
  });

  it('2.7 pushing a box off its target costs −1.1 and leaves the player on the target', () => {
    const env = SokobanEnv.fromRender(grid('######/#____#/#P√__#/#____#/#____#/######'));
    expect(env.isDone()).toBe(true); // a solved board is terminal, but gym still applies a step
    const [out] = play(env, ['Right']);
    expect(out).toEqual({ reward: -1.1, done: false, success: false, effective: true, valid: true });
    expect(env.render()).toBe(grid('######/#____#/#_SX_#/#____#/#____#/######'));
    expect(env.describe()).toBe('Player (P) is at (2,2); box (X) is at (2,3); target (O) is at (2,2).');
    expect(env.isDone()).toBe(false);
  });

  it('2.8 the envs.yaml sample Down || Left || Down matches its prediction', () => {
    const env = SokobanEnv.fromRender(grid('######/#_####/#_P###/#_X#_#/#__O_#/######'));
    const outs = play(env, ['Down', 'Left', 'Down']);
    expect(outs.map((o) => o.reward)).toEqual([-0.1, -0.1, -0.1]);
    expect(outs.reduce((sum, o) => sum + o.reward, 0)).toBe(-0.30000000000000004);
    expect(env.render()).toBe(grid('######/#_####/#__###/#__#_#/#PXO_#/######'));
  });

  it('ends the episode when num_env_steps reaches max_steps (100)', () => {
    const env = SokobanEnv.fromRender(start21);
    const outs = Array.from({ length: 100 }, () => env.step(3));
    expect(outs.slice(0, 99).every((o) => !o.done)).toBe(true);
    expect(outs[99]).toMatchObject({ done: true, success: false });
    expect(env.isDone()).toBe(true);
  });
});

describe('SokobanEnv surface', () => {
  const env = SokobanEnv.fromRender(grid('######/#O####/#__###/#X_###/#_P_##/######'));

  it('looks actions up case-insensitively, whole string only', () => {
    expect(env.lookupAction('up')).toBe(1);
    expect(env.lookupAction('DOWN')).toBe(2);
    expect(env.lookupAction('Left')).toBe(3);
    expect(env.lookupAction('right')).toBe(4);
    for (const bad of ['Move up', 'Up.', ' Up', 'Up ', '', '1'])
      expect(env.lookupAction(bad)).toBeUndefined();
  });

  it('exposes the prefix vocabulary and a text_with_coordinates state', () => {
    expect(env.actionNames).toEqual(['Up', 'Down', 'Left', 'Right']);
    expect(env.gridVocabulary).toBe(
      '#: wall, _: empty, O: target, √: box on target, X: box, P: player, S: player on target',
    );
    expect(env.rewardIsFloat).toBe(true);
    expect(env.state()).toBe(
      `${env.render()}\nPlayer (P) is at (4,2); box (X) is at (3,1); target (O) is at (1,1).`,
    );
  });

  it('repeats clauses per box and target in row-major order', () => {
    const two = SokobanEnv.fromRender(grid('######/#O___#/#_X__#/#__XP#/#___O#/######'));
    expect(two.describe()).toBe(
      'Player (P) is at (3,4); box (X) is at (2,2); box (X) is at (3,3); target (O) is at (1,1); target (O) is at (4,4).',
    );
  });

  it('clones independently', () => {
    const original = SokobanEnv.fromRender(grid('######/#____#/#_PXO#/#____#/#____#/######'));
    const copy = original.clone();
    copy.step(4);
    expect(copy.isDone()).toBe(true);
    expect(original.isDone()).toBe(false);
    expect(original.render()).toBe(grid('######/#____#/#_PXO#/#____#/#____#/######'));
  });

  it.each([
    ['######\n#P_O#', /row 1 has 5 cells, expected 6/],
    ['#####\n#PXO?\n#####', /unknown character "\?" at \(1,4\)/],
    ['#####\n#_XO#\n#####', /found 0 players/],
    ['######\n#PXOP#\n######', /found 2 players/],
    ['######\n#PXXO#\n######', /2 boxes \(X\/√\) but 1 targets/],
    ['######\n#P__O#\n######', /no box/],
    ['', /empty first row/],
    ['#####\n#PXO#\n#####\n', /row 3 has 0 cells/],
  ])('rejects malformed render %j', (render, message) => {
    expect(() => SokobanEnv.fromRender(render)).toThrow(message);
  });

  it('rejects non-action ids and requires a loaded room', () => {
    expect(() => env.clone().step(5)).toThrow(/action 5 is not an action id 1..4/);
    expect(() => env.clone().step('Up')).toThrow(/action "Up"/);
    expect(() => new SokobanEnv().render()).toThrow(/no room loaded/);
  });
});

interface PuzzleLine {
  seed: number;
  split: 'val' | 'train';
  render: string;
}
const puzzles: PuzzleLine[] = readFileSync(
  new URL('../../envs/puzzles/sokoban-6x6-1box.jsonl', import.meta.url),
  'utf8',
)
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as PuzzleLine);

describe('SPA puzzles (docs/spa-testvectors.md#puzzles, envs/puzzles)', () => {
  const fixtures: [number, string, string | null, string][] = [
    [
      10000,
      '######/#O####/#__###/#X_###/#_P_##/######',
      'Player (P) is at (4,2); box (X) is at (3,1); target (O) is at (1,1).',
      'Left, Up, Up',
    ],
    [
      10001,
      '######/#____#/#_OX_#/#_#P_#/######/######',
      'Player (P) is at (3,3); box (X) is at (2,3); target (O) is at (2,2).',
      'Right, Up, Left',
    ],
    [
      10002,
      '######/######/#P####/#X__##/#O__##/######',
      'Player (P) is at (2,1); box (X) is at (3,1); target (O) is at (4,1).',
      'Down',
    ],
    [10003, '######/#__#_#/#__O_#/#PX__#/#____#/######', null, 'Right, Down, Right, Up'],
    [10004, '######/##___#/##_X_#/#_P_O#/###_##/######', null, 'Up, Right, Up, Right, Down'],
    [
      123,
      '######/######/#O####/#XP###/#__###/######',
      'Player (P) is at (3,2); box (X) is at (3,1); target (O) is at (2,1).',
      'Down, Left, Up',
    ],
    [
      124,
      '######/######/#O####/#X_###/#P####/######',
      'Player (P) is at (4,1); box (X) is at (3,1); target (O) is at (2,1).',
      'Up',
    ],
    [125, '######/#__O_#/#____#/#_X__#/#_P###/######', null, 'Up, Up, Left, Up, Right'],
    [126, '######/######/#_#O_#/#__X_#/#_#_P#/######', null, 'Left, Up'],
    [127, '######/###__#/###O_#/##_X_#/#_P__#/######', null, 'Right, Up'],
  ];

  it.each(fixtures)(
    'seed %i: coordinates and the listed shortest solution',
    (seed, rows, coords, solution) => {
      const line = puzzles.find((p) => p.seed === seed);
      expect(line?.render).toBe(grid(rows));
      const env = SokobanEnv.fromRender(grid(rows));
      if (coords) expect(env.describe()).toBe(coords);
      const listed = solution.split(', ');
      // Same move order as RAGEN's BFS, so the same first-found path, not just the same length.
      expect(solveSokoban(env.snapshot())).toEqual(listed);
      const outs = play(env, listed);
      expect(outs.at(-1)).toMatchObject({ done: true, success: true, reward: 10.9 });
      expect(outs.slice(0, -1).every((o) => !o.success)).toBe(true);
    },
  );

  it('has 384 lines: 128 val seeds 123..250, then 256 train seeds 10000..10255', () => {
    expect(puzzles).toHaveLength(384);
    expect(puzzles.filter((p) => p.split === 'val').map((p) => p.seed)).toEqual(
      Array.from({ length: 128 }, (_, i) => 123 + i),
    );
    expect(puzzles.filter((p) => p.split === 'train').map((p) => p.seed)).toEqual(
      Array.from({ length: 256 }, (_, i) => 10000 + i),
    );
  });

  it('every puzzle round-trips, is BFS-solvable, and val puzzles need ≤ 10 moves', () => {
    for (const { seed, split, render } of puzzles) {
      const env = SokobanEnv.fromRender(render);
      expect(env.render(), `seed ${seed}`).toBe(render);
      const solution = solveSokoban(env.snapshot());
      expect(solution, `seed ${seed}`).not.toBeNull();
      expect(solution?.length, `seed ${seed}`).toBeGreaterThan(0);
      if (split === 'val') expect(solution?.length, `seed ${seed}`).toBeLessThanOrEqual(10);
      const outs = play(env, solution ?? []);
      expect(outs.at(-1)?.success, `seed ${seed}`).toBe(true);
    }
  });
});

describe('render ⇄ fromRender', () => {
  it('round-trips arbitrary well-formed boards', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 3, max: 8 }),
        fc.integer({ min: 3, max: 8 }),
        fc.array(fc.constantFrom('#', '_'), { minLength: 64, maxLength: 64 }),
        fc.array(fc.constantFrom(['X', 'O'], ['√']), { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        fc.array(fc.double({ noNaN: true }), { minLength: 64, maxLength: 64 }),
        (rows, cols, background, pairs, onTarget, sortKeys) => {
          // Well formed by construction: one player; every box has a target (S needs an extra X).
          const items = [onTarget ? 'S' : 'P', ...(onTarget ? ['X'] : []), ...pairs.flat()];
          const cells: string[] = background.slice(0, rows * cols);
          const order = cells
            .map((_, i) => i)
            .sort((a, b) => (sortKeys[a] as number) - (sortKeys[b] as number));
          items.forEach((item, k) => (cells[order[k] as number] = item));
          const render = Array.from({ length: rows }, (_, r) =>
            cells.slice(r * cols, (r + 1) * cols).join(''),
          ).join('\n');
          expect(renderRoom(parseRender(render))).toBe(render);
          expect(SokobanEnv.fromRender(render).render()).toBe(render);
        },
      ),
      { numRuns: 200 },
    );
  });
});
