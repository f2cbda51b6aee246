import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FrozenLakeEnv } from '../../envs/frozenlake/frozenlake-env.js';
import { generateLakeMap } from '../../envs/frozenlake/generator.js';
import { findTiles, isGoalReachable, lakeDesc, parseLakeDesc } from '../../envs/frozenlake/lake-map.js';
import { FROZENLAKE_4X4, FROZENLAKE_6X6, FROZENLAKE_VARIANTS } from '../../envs/frozenlake/variants.js';

const seeds = fc.integer({ min: 0, max: 2 ** 31 - 1 });
const options = fc.record({
  size: fc.integer({ min: 2, max: 8 }),
  p: fc.double({ min: 0.3, max: 1, noNaN: true }),
});

describe('FrozenLake map generator (docs/spa-envs.md#frozenlake)', () => {
  it('always has one S, one G elsewhere, and G reachable from S without crossing a hole', () => {
    fc.assert(
      fc.property(options, seeds, (opts, seed) => {
        const map = generateLakeMap(opts, seed);
        expect(map.rows).toBe(opts.size);
        const [start] = findTiles(map, 'S');
        const [goal] = findTiles(map, 'G');
        expect(findTiles(map, 'S')).toHaveLength(1);
        expect(findTiles(map, 'G')).toHaveLength(1);
        expect(start).not.toEqual(goal);
        expect(isGoalReachable(map)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('is deterministic: same seed ⇒ same map', () => {
    fc.assert(
      fc.property(options, seeds, (opts, seed) => {
        expect(lakeDesc(generateLakeMap(opts, seed))).toEqual(lakeDesc(generateLakeMap(opts, seed)));
      }),
      { numRuns: 100 },
    );
  });

  it('gives consecutive seeds (SPA groups) unrelated maps with about 1 − p holes', () => {
    const maps = Array.from({ length: 256 }, (_, i) => lakeDesc(generateLakeMap(FROZENLAKE_4X4, 10000 + i)));
    expect(new Set(maps.map((m) => m.join('/'))).size).toBeGreaterThan(240);
    const holes = maps
      .join('')
      .split('')
      .filter((t) => t === 'H').length;
    // 14 random tiles per map at p = 0.8 → ≈ 2.8 holes before rejection (rejection removes a few).
    expect(holes / maps.length).toBeGreaterThan(1.8);
    expect(holes / maps.length).toBeLessThan(3.2);
    const cornerHoles = maps.filter((m) => m[0]?.[0] === 'H').length / maps.length;
    expect(cornerHoles).toBeLessThan(0.35);
    const startCells = new Set(maps.map((m) => m.join('').indexOf('S')));
    expect(startCells.size).toBe(16);
  });

  it('detects unreachable goals (RAGEN is_valid)', () => {
    expect(isGoalReachable(parseLakeDesc(['SH', 'HG']))).toBe(false);
    expect(isGoalReachable(parseLakeDesc(['SF', 'HG']))).toBe(true);
    expect(isGoalReachable(parseLakeDesc(['GHS']))).toBe(false);
  });

  it('rejects sizes that cannot place S and G apart', () => {
    expect(() => generateLakeMap({ size: 1, p: 0.8 }, 1)).toThrow(/integer ≥ 2/);
    expect(() => generateLakeMap({ size: 4, p: 1.5 }, 1)).toThrow(/\[0, 1\]/);
  });

  it('offers 4x4 and 6x6 variants that reset to maps of that size', () => {
    expect(FROZENLAKE_VARIANTS['4x4']).toEqual({ size: 4, p: 0.8, slippery: true });
    const env = new FrozenLakeEnv(FROZENLAKE_6X6);
    env.reset(10000);
    expect(
      env
        .render()
        .split('\n')
        .map((row) => Array.from(row).length),
    ).toEqual([6, 6, 6, 6, 6, 6]);
  });
});

describe('FrozenLake env render round-trip', () => {
  it('fromRender(render) reproduces render and describe after any action sequence', () => {
    fc.assert(
      fc.property(seeds, fc.array(fc.integer({ min: 1, max: 4 }), { maxLength: 12 }), (seed, actions) => {
        const env = new FrozenLakeEnv();
        env.reset(seed);
        for (const action of actions) {
          if (env.isDone()) break;
          env.step(action);
        }
        const copy = FrozenLakeEnv.fromRender(env.render());
        expect(copy.render()).toBe(env.render());
        expect(copy.describe()).toBe(env.describe());
        expect(copy.isDone()).toBe(env.isDone());
      }),
      { numRuns: 200 },
    );
  });

  it('reset(seed) is deterministic in map and slips', () => {
    fc.assert(
      fc.property(seeds, fc.array(fc.integer({ min: 1, max: 4 }), { maxLength: 10 }), (seed, actions) => {
        const play = (): string[] => {
          const env = new FrozenLakeEnv();
          env.reset(seed);
          return actions.map((a) => (env.isDone() ? env.render() : (env.step(a), env.render())));
        };
        expect(play()).toEqual(play());
      }),
      { numRuns: 100 },
    );
  });
});
