import { describe, expect, it } from 'vitest';
import { passAtK, passReport } from '../../streams/eval/pass-at-k.js';

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

describe('passReport (reference §10)', () => {
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
