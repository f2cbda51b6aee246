/**
 * Issue 36 item 4: the web tap showed "success rate (Pass@1) 7.9 %" beside "Pass@k 0.0 % (k=4)":
 * Pass@1 came from every episode, Pass@k from the full groups only. Both now come from the same
 * full groups (so Pass@1 ≤ Pass@k); the success rate over every episode is its own number.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { passReport } from '../../streams/eval/pass-at-k.js';
import { TapStats } from '../../web/server/tap-stats.js';

describe('web tap: Pass@1 and Pass@k of the same episodes', () => {
  it('a run topic mixing group sizes: Pass@1 is not above Pass@k', () => {
    const stats = new TapStats();
    // 10 groups of 4 (k = 4) without a success, and 38 one-episode groups, 4 of them solved.
    for (let g = 0; g < 10; g++) for (let m = 0; m < 4; m++) stats.episode('sokoban', `rl/g${g}`, false);
    for (let g = 0; g < 38; g++) stats.episode('sokoban', `warmup/g${g}`, g < 4);
    const [sokoban] = stats.snapshot().envs;
    expect(sokoban).toMatchObject({ episodes: 78, successes: 4, k: 4, fullGroups: 10, pass1: 0, passK: 0 });
    expect(sokoban!.successRate).toBeCloseTo(4 / 78, 12);
  });

  it('any mix of groups: Pass@1 ≤ Pass@k, both as the eval report computes them on the full groups', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.boolean(), { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 30 }),
        (groups) => {
          const stats = new TapStats();
          groups.forEach((g, i) => g.forEach((s) => stats.episode('frozenlake', `g${i}`, s)));
          const [env] = stats.snapshot().envs;
          const k = Math.max(...groups.map((g) => g.length));
          const full = groups.filter((g) => g.length === k);
          const report = passReport(full.map((successes, i) => ({ groupId: `g${i}`, successes })));
          expect(env!.k).toBe(k);
          expect(env!.pass1).toBeCloseTo(report.pass1, 12);
          expect(env!.passK).toBeCloseTo(report.passK, 12);
          expect(env!.pass1!).toBeLessThanOrEqual(env!.passK! + 1e-12);
          const all = groups.flat();
          expect(env!.successRate).toBeCloseTo(all.filter(Boolean).length / all.length, 12);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('a group still filling counts in the success rate only', () => {
    const stats = new TapStats();
    stats.episode('sudoku', 'g0', true);
    stats.episode('sudoku', 'g0', false);
    stats.episode('sudoku', 'g1', true);
    // k = 2: g0 is full, g1 is not.
    expect(stats.snapshot().envs[0]).toMatchObject({ k: 2, fullGroups: 1, pass1: 0.5, passK: 1 });
    expect(stats.snapshot().envs[0]!.successRate).toBeCloseTo(2 / 3, 12);
    expect(new TapStats().snapshot().envs).toEqual([]);
  });
});
