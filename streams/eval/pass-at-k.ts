/**
 * Pass@k metrics (reference §10). SPA reports Pass@1 = mean success over all episodes and
 * Pass@k (k = group size) = fraction of groups with at least one success; for curves with
 * k < group size the unbiased estimator 1 − C(n−c, k) / C(n, k) of Chen et al. (2021) is used.
 */

/** Unbiased pass@k for one group with `n` samples of which `c` succeeded. */
export function passAtK(n: number, c: number, k: number): number {
  if (k > n) throw new RangeError(`pass@${k} needs at least ${k} samples per group, got ${n}`);
  if (n - c < k) return 1;
  // 1 − Π_{i=n−c+1..n} (1 − k/i): the product form avoids huge binomials.
  let missAll = 1;
  for (let i = n - c + 1; i <= n; i++) missAll *= 1 - k / i;
  return 1 - missAll;
}

export interface GroupOutcome {
  readonly groupId: string;
  readonly successes: readonly boolean[];
}

export interface PassReport {
  readonly episodes: number;
  readonly groups: number;
  /** Mean success over all episodes. */
  readonly pass1: number;
  /** k = group size: fraction of groups with ≥ 1 success (SPA's `pass@8`). */
  readonly passK: number;
  readonly k: number;
  /** Unbiased pass@k for k = 1, 2, 4, … up to the group size. */
  readonly curve: readonly { readonly k: number; readonly value: number }[];
}

/** Aggregates group outcomes into SPA's metrics and an unbiased pass@k curve. */
export function passReport(groups: readonly GroupOutcome[]): PassReport {
  if (groups.length === 0) throw new RangeError('pass@k of zero groups');
  const n = groups[0]!.successes.length;
  if (groups.some((g) => g.successes.length !== n))
    throw new RangeError('every group must have the same number of episodes');
  const successes = groups.map((g) => g.successes.filter(Boolean).length);
  const episodes = groups.length * n;
  const curve: { k: number; value: number }[] = [];
  for (let k = 1; k <= n; k *= 2) curve.push({ k, value: mean(successes.map((c) => passAtK(n, c, k))) });
  if (curve.at(-1)!.k !== n) curve.push({ k: n, value: mean(successes.map((c) => passAtK(n, c, n))) });
  return {
    episodes,
    groups: groups.length,
    pass1: successes.reduce((a, c) => a + c, 0) / episodes,
    passK: successes.filter((c) => c > 0).length / groups.length,
    k: n,
    curve,
  };
}

function mean(values: readonly number[]): number {
  return values.reduce((a, v) => a + v, 0) / values.length;
}
