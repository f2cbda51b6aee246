/**
 * Pass@k metrics (docs/spa-generation.md#eval). SPA reports Pass@1 = mean success over all episodes and
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
  /** The puzzle the group played (its seed); groups of one puzzle in several passes share it. Default: groupId. */
  readonly puzzle?: string;
  readonly successes: readonly boolean[];
}

export interface PassReport {
  readonly episodes: number;
  /** Distinct puzzles. */
  readonly groups: number;
  /** Independent passes over the same puzzles (SPA validates twice and averages). */
  readonly passes: number;
  /** Mean success over all episodes. */
  readonly pass1: number;
  /** k = group size: fraction of groups with ≥ 1 success (SPA's `pass@8`), averaged over passes. */
  readonly passK: number;
  /** Standard errors of `pass1` and `passK` across puzzles (each puzzle's value averaged over passes). */
  readonly pass1StdErr: number;
  readonly passKStdErr: number;
  readonly k: number;
  /** Unbiased pass@k for k = 1, 2, 4, … up to the group size. */
  readonly curve: readonly { readonly k: number; readonly value: number }[];
  /** Pass@1 of each puzzle (averaged over passes), keyed by puzzle: what `pairedDifference` pairs. */
  readonly puzzlePass1: Readonly<Record<string, number>>;
}

/**
 * Aggregates group outcomes into SPA's metrics and an unbiased pass@k curve. Groups of the same
 * puzzle (several passes) are averaged per puzzle first, so the standard errors are across
 * puzzles, the unit the validation set samples (docs/spa-generation.md#eval).
 */
export function passReport(groups: readonly GroupOutcome[]): PassReport {
  if (groups.length === 0) throw new RangeError('pass@k of zero groups');
  const n = groups[0]!.successes.length;
  if (groups.some((g) => g.successes.length !== n))
    throw new RangeError('every group must have the same number of episodes');
  const byPuzzle = new Map<string, number[]>();
  for (const g of groups) {
    const key = g.puzzle ?? g.groupId;
    byPuzzle.set(key, [...(byPuzzle.get(key) ?? []), g.successes.filter(Boolean).length]);
  }
  const puzzles = [...byPuzzle.values()];
  const passes = puzzles[0]!.length;
  if (puzzles.some((counts) => counts.length !== passes))
    throw new RangeError('every puzzle must be played in the same number of passes');
  const perPuzzle = (f: (c: number) => number): number[] => puzzles.map((counts) => mean(counts.map(f)));
  const ks: number[] = [];
  for (let k = 1; k <= n; k *= 2) ks.push(k);
  if (ks.at(-1) !== n) ks.push(n);
  const pass1 = perPuzzle((c) => c / n);
  const puzzleNames = [...byPuzzle.keys()];
  const passK = perPuzzle((c) => (c > 0 ? 1 : 0));
  return {
    episodes: groups.length * n,
    groups: puzzles.length,
    passes,
    pass1: mean(pass1),
    passK: mean(passK),
    pass1StdErr: standardError(pass1),
    passKStdErr: standardError(passK),
    k: n,
    curve: ks.map((k) => ({ k, value: mean(perPuzzle((c) => passAtK(n, c, k))) })),
    puzzlePass1: Object.fromEntries(puzzleNames.map((name, i) => [name, pass1[i]!])),
  };
}

/**
 * Pass@1 of `after` minus `before`, paired by puzzle (docs/spa-eval.md#paired): both reports
 * played the same puzzles, so the standard error is that of the per-puzzle differences, which
 * leaves out how much harder one puzzle is than another (a shared term of both reports).
 */
export function pairedDifference(
  before: Pick<PassReport, 'puzzlePass1'>,
  after: Pick<PassReport, 'puzzlePass1'>,
): { readonly mean: number; readonly stdErr: number; readonly puzzles: number } {
  const puzzles = Object.keys(before.puzzlePass1);
  const missing = puzzles.filter((p) => !(p in after.puzzlePass1));
  if (missing.length > 0 || puzzles.length !== Object.keys(after.puzzlePass1).length)
    throw new RangeError(
      `paired difference needs the same puzzles in both reports (${missing.length} of ${puzzles.length} missing)`,
    );
  const differences = puzzles.map((p) => after.puzzlePass1[p]! - before.puzzlePass1[p]!);
  return { mean: mean(differences), stdErr: standardError(differences), puzzles: puzzles.length };
}

/**
 * {@link pairedDifference} pooled over independent starts (runs of the same recipe from different
 * seeds, each with its own before/after pair on the same puzzles): each puzzle's difference is
 * averaged over the starts, then the mean and its standard error are taken across puzzles, as for
 * one start. The spread between starts enters only through those per-puzzle means.
 */
export function pooledPairedDifference(
  pairs: readonly (readonly [Pick<PassReport, 'puzzlePass1'>, Pick<PassReport, 'puzzlePass1'>])[],
): { readonly mean: number; readonly stdErr: number; readonly puzzles: number; readonly starts: number } {
  if (pairs.length === 0) throw new RangeError('pooled paired difference needs at least one start');
  const puzzles = Object.keys(pairs[0]![0].puzzlePass1);
  for (const [before, after] of pairs) pairedDifference(before, after); // the same puzzles in each pair
  for (const [before] of pairs)
    if (
      Object.keys(before.puzzlePass1).length !== puzzles.length ||
      puzzles.some((p) => !(p in before.puzzlePass1))
    )
      throw new RangeError('pooled paired difference needs the same puzzles in every start');
  const differences = puzzles.map((p) =>
    mean(pairs.map(([before, after]) => after.puzzlePass1[p]! - before.puzzlePass1[p]!)),
  );
  return {
    mean: mean(differences),
    stdErr: standardError(differences),
    puzzles: puzzles.length,
    starts: pairs.length,
  };
}

/** Pass@1 of several starts on the same puzzles: the mean, and its standard error across puzzles. */
export function pooledPass1(reports: readonly Pick<PassReport, 'puzzlePass1'>[]): {
  readonly mean: number;
  readonly stdErr: number;
} {
  const puzzles = Object.keys(reports[0]?.puzzlePass1 ?? {});
  const perPuzzle = puzzles.map((p) => mean(reports.map((r) => r.puzzlePass1[p]!)));
  return { mean: mean(perPuzzle), stdErr: standardError(perPuzzle) };
}

function mean(values: readonly number[]): number {
  return values.reduce((a, v) => a + v, 0) / values.length;
}

/** Sample standard deviation / √count; 0 for a single value. */
function standardError(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const m = mean(values);
  const variance = values.reduce((a, v) => a + (v - m) ** 2, 0) / (values.length - 1);
  return Math.sqrt(variance / values.length);
}
