import { describe, expect, it } from 'vitest';
import { evaluatePolicy } from '../../streams/eval/evaluate.js';
import {
  pairedDifference,
  passAtK,
  passReport,
  pooledPairedDifference,
  pooledPass1,
} from '../../streams/eval/pass-at-k.js';
import { builtinPolicy } from '../../policies/builtin.js';

describe('passAtK (unbiased estimator)', () => {
  it('matches 1 − C(n−c,k)/C(n,k) on small cases', () => {
    const choose = (n: number, k: number): number =>
      k < 0 || k > n ? 0 : k === 0 ? 1 : (choose(n - 1, k - 1) * n) / k;
    for (const [n, c, k] of [
      [8, 0, 1],
      [8, 1, 1],
      [8, 3, 2],
      [8, 5, 4],
      [8, 7, 8],
      [10, 2, 5],
    ] as const) {
      expect(passAtK(n, c, k)).toBeCloseTo(1 - choose(n - c, k) / choose(n, k), 12);
    }
  });

  it('is c/n at k = 1 and [c > 0] at k = n', () => {
    expect(passAtK(8, 3, 1)).toBeCloseTo(3 / 8, 12);
    expect(passAtK(8, 1, 8)).toBe(1);
    expect(passAtK(8, 0, 8)).toBe(0);
  });

  it('refuses k larger than the group', () => {
    expect(() => passAtK(4, 1, 8)).toThrow(/at least 8 samples/);
  });
});

describe('passReport (docs/spa-eval.md#pass-at-k)', () => {
  it('Pass@1 = mean success, Pass@k = groups with any success', () => {
    const report = passReport([
      { groupId: 'a', successes: [true, false, false, false] },
      { groupId: 'b', successes: [false, false, false, false] },
      { groupId: 'c', successes: [true, true, true, true] },
    ]);
    expect(report.pass1).toBeCloseTo(5 / 12, 12);
    expect(report.passK).toBeCloseTo(2 / 3, 12);
    expect(report.k).toBe(4);
    expect(report.curve.map((p) => p.k)).toEqual([1, 2, 4]);
    expect(report.curve[0]!.value).toBeCloseTo(report.pass1, 12);
    expect(report.curve.at(-1)!.value).toBeCloseTo(report.passK, 12);
  });
});

describe('passReport over several passes (SPA validates twice and averages)', () => {
  it('averages each puzzle over its passes, with standard errors across puzzles', () => {
    const report = passReport([
      { groupId: 'p0/a', puzzle: 'a', successes: [true, false] },
      { groupId: 'p0/b', puzzle: 'b', successes: [false, false] },
      { groupId: 'p1/a', puzzle: 'a', successes: [true, true] },
      { groupId: 'p1/b', puzzle: 'b', successes: [false, true] },
    ]);
    expect(report).toMatchObject({ groups: 2, passes: 2, episodes: 8, k: 2 });
    // puzzle a: Pass@1 3/4, Pass@2 1; puzzle b: Pass@1 1/4, Pass@2 1/2
    expect(report.pass1).toBeCloseTo(0.5, 12);
    expect(report.passK).toBeCloseTo(0.75, 12);
    // sd of (3/4, 1/4) = √(2·0.0625) ≈ 0.3536; / √2 = 0.25
    expect(report.pass1StdErr).toBeCloseTo(0.25, 12);
    expect(report.passKStdErr).toBeCloseTo(0.25, 12);
  });

  it('refuses puzzles played in different numbers of passes', () => {
    expect(() =>
      passReport([
        { groupId: 'x', puzzle: 'a', successes: [true] },
        { groupId: 'y', puzzle: 'a', successes: [true] },
        { groupId: 'z', puzzle: 'b', successes: [true] },
      ]),
    ).toThrow(/same number of passes/);
  });
});

/** A report of 4 episodes a puzzle whose Pass@1 per puzzle is `pass1ByPuzzle` (multiples of 0.25). */
const report = (pass1ByPuzzle: readonly number[]) =>
  passReport(
    pass1ByPuzzle.map((p, i) => ({
      groupId: `g${i}`,
      puzzle: `seed${i}`,
      successes: [0, 1, 2, 3].map((j) => j < p * 4),
    })),
  );

describe('pairedDifference (docs/spa-eval.md#paired)', () => {
  it('pairs by puzzle: a steady gain over puzzles of very different difficulty has a small standard error', () => {
    const before = report([0, 0.25, 0.5, 0.75]);
    const after = report([0.25, 0.5, 0.75, 1]);
    expect(after.puzzlePass1).toEqual({ seed0: 0.25, seed1: 0.5, seed2: 0.75, seed3: 1 });
    const d = pairedDifference(before, after);
    expect(d).toEqual({ mean: 0.25, stdErr: 0, puzzles: 4 });
    // Unpaired, the spread of difficulty swamps the same gain.
    expect(Math.hypot(before.pass1StdErr, after.pass1StdErr)).toBeGreaterThan(0.2);
  });

  it('has the standard error of the per-puzzle differences', () => {
    const d = pairedDifference(report([0, 0, 0.5, 0.5]), report([0.5, 0, 0.5, 1]));
    // differences 0.5, 0, 0, 0.5: mean 0.25, sd √(4·0.0625/3) = 0.2887, / 2
    expect(d.mean).toBeCloseTo(0.25, 12);
    expect(d.stdErr).toBeCloseTo(Math.sqrt(0.25 / 3) / 2, 12);
  });

  it('refuses reports of different puzzles', () => {
    expect(() => pairedDifference(report([0, 1]), report([0, 1, 1]))).toThrow(/same puzzles/);
  });
});

describe('pooledPairedDifference (docs/spa-check.md#statistics)', () => {
  it('averages each puzzle over the starts, then pairs across puzzles', () => {
    // start 1: differences 0.5, 0, 0, 0.5; start 2: 0, 0, 0.5, 0.5 → per puzzle 0.25, 0, 0.25, 0.5
    const d = pooledPairedDifference([
      [report([0, 0, 0.5, 0.5]), report([0.5, 0, 0.5, 1])],
      [report([0, 0.25, 0, 0.5]), report([0, 0.25, 0.5, 1])],
    ]);
    expect(d.mean).toBeCloseTo(0.25, 12);
    // sd of 0.25, 0, 0.25, 0.5 = √(0.125/3); / √4
    expect(d.stdErr).toBeCloseTo(Math.sqrt(0.125 / 3) / 2, 12);
    expect(d).toMatchObject({ puzzles: 4, starts: 2 });
  });

  it('is pairedDifference for one start', () => {
    const [before, after] = [report([0, 0, 0.5, 0.5]), report([0.5, 0, 0.5, 1])];
    expect(pooledPairedDifference([[before, after]])).toMatchObject(pairedDifference(before, after));
  });

  it('refuses starts on different puzzles', () => {
    expect(() =>
      pooledPairedDifference([
        [report([0, 1]), report([1, 1])],
        [report([0, 1, 1]), report([1, 1, 1])],
      ]),
    ).toThrow(/same puzzles/);
  });

  it('pools Pass@1 per puzzle', () => {
    const p = pooledPass1([report([0, 0.5]), report([0.5, 1])]);
    expect(p.mean).toBeCloseTo(0.5, 12);
    expect(p.stdErr).toBeCloseTo(0.25, 12); // per puzzle 0.25, 0.75: sd √0.125 / √2
  });
});

describe('evaluatePolicy --passes', () => {
  it('plays every puzzle once per pass with fresh samples and reports per-puzzle averages', async () => {
    const policy = builtinPolicy('random', { mode: 'base', seed: 3 });
    const one = await evaluatePolicy(policy, { env: 'frozenlake', puzzles: 6, k: 4 });
    const two = await evaluatePolicy(builtinPolicy('random', { mode: 'base', seed: 3 }), {
      env: 'frozenlake',
      puzzles: 6,
      k: 4,
      passes: 2,
    });
    expect(one).toMatchObject({ groups: 6, passes: 1, episodes: 24 });
    expect(two).toMatchObject({ groups: 6, passes: 2, episodes: 48 });
    expect(two.pass1StdErr).toBeGreaterThan(0);
  });
});
