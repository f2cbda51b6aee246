import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { passReport } from '../../streams/eval/pass-at-k.js';
import { MAX_ENVS, OTHER_ENVS, SERIES_SECONDS, TapStats } from '../../web/server/tap-stats.js';

describe('TapStats', () => {
  it('gives per-env Pass@1 and Pass@k over full groups only', () => {
    const stats = new TapStats();
    // sokoban: g0 = [✓, ✗], g1 = [✗, ✗], g2 still filling = [✓].
    stats.episode('sokoban', 'g0', true);
    stats.episode('sokoban', 'g0', false);
    stats.episode('sokoban', 'g1', false);
    stats.episode('sokoban', 'g1', false);
    stats.episode('sokoban', 'g2', true);
    stats.episode('sudoku', 's0', false);
    const [sokoban, sudoku] = stats.snapshot().envs;
    expect(sokoban).toEqual({
      env: 'sokoban',
      stage: '',
      episodes: 5,
      successes: 2,
      successRate: 2 / 5,
      pass1: 1 / 4,
      k: 2,
      passK: 1 / 2,
      fullGroups: 2,
    });
    expect(sudoku).toMatchObject({ env: 'sudoku', episodes: 1, k: 1, passK: 0, fullGroups: 1 });
  });

  it('agrees with the eval report on complete groups, also past the open-group cap', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }), { minLength: 1, maxLength: 40 }),
        (groups) => {
          const stats = new TapStats();
          groups.forEach((g, i) => g.forEach((s) => stats.episode('frozenlake', `g${i}`, s)));
          const report = passReport(groups.map((successes, i) => ({ groupId: `g${i}`, successes })));
          const [env] = stats.snapshot().envs;
          expect(env!.pass1).toBeCloseTo(report.pass1, 12);
          expect(env!.passK).toBeCloseTo(report.passK, 12);
          expect(env!.fullGroups).toBe(groups.length);
        },
      ),
      { numRuns: 50 },
    );
    // 6000 groups of 2 (one success each in even groups): folding the oldest keeps the numbers.
    const stats = new TapStats();
    for (let g = 0; g < 6000; g++) {
      stats.episode('sokoban', `g${g}`, g % 2 === 0);
      stats.episode('sokoban', `g${g}`, false);
    }
    expect(stats.snapshot().envs[0]).toMatchObject({ episodes: 12000, fullGroups: 6000, passK: 0.5, k: 2 });
  });

  it(`names at most ${MAX_ENVS} envs; episodes of any further env share one row (env is any string)`, () => {
    const stats = new TapStats();
    for (let e = 0; e < MAX_ENVS + 10; e++) stats.episode(`env-${e}`, 'g', e % 2 === 0);
    stats.episode('env-0', 'g', false); // a named env keeps its row
    stats.episode(`env-${MAX_ENVS}`, 'g', true); // the same group id in two envs: two groups
    const { envs } = stats.snapshot();
    expect(envs).toHaveLength(MAX_ENVS + 1);
    expect(envs.find((e) => e.env === 'env-0')).toMatchObject({ episodes: 2, k: 2 });
    expect(envs.find((e) => e.env === OTHER_ENVS)).toMatchObject({ episodes: 11, fullGroups: 1, k: 2 });
  });

  it('counts records per second with empty seconds as 0 and slides the window', () => {
    const stats = new TapStats();
    const t0 = 1_700_000_000_000;
    stats.recordRead('Trajectory', t0 + 100);
    stats.recordRead('SftRow', t0 + 900);
    stats.recordRead('SftRow', t0 + 2_500);
    const snap = stats.snapshot(t0 + 3_000);
    expect(snap.throughput.map((p) => p.value)).toEqual([2, 0, 1, 0]);
    expect(snap.byKind).toEqual({ Trajectory: 1, SftRow: 2 });
    expect(snap.read).toBe(3);
    const later = stats.snapshot(t0 + (SERIES_SECONDS + 10) * 1000);
    expect(later.throughput).toHaveLength(SERIES_SECONDS);
    stats.lag(5, t0);
    stats.lag(7, t0 + SERIES_SECONDS * 1000 + 1);
    expect(stats.snapshot().lag).toEqual([{ t: t0 + SERIES_SECONDS * 1000 + 1, value: 7 }]);
  });
});
