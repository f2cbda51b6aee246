import { loadavg } from 'node:os';

/** The `q`-quantile of `values`, interpolating linearly between neighbouring order statistics. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const at = q * (sorted.length - 1);
  const low = Math.floor(at);
  return sorted[low]! + (sorted[Math.min(low + 1, sorted.length - 1)]! - sorted[low]!) * (at - low);
}

/** The median (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  return quantile(values, 0.5);
}

/**
 * A distribution-free confidence interval for the median of `values` (their population median,
 * assuming independent draws): the order statistics x(j) and x(n+1-j) with the largest j such that
 * a Binomial(n, 1/2) count falls below j with probability at most (1 - confidence) / 2. With too
 * few values for that (n < 6 at 95%) it is the whole range. Written out (a dozen lines) rather
 * than pulling in a statistics package for one binomial tail.
 */
export function medianInterval(values: readonly number[], confidence: number): [number, number] {
  if (!(confidence > 0 && confidence < 1))
    throw new RangeError(`confidence ${confidence}: must be in (0, 1)`);
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  if (n === 0) throw new RangeError('medianInterval of no values');
  const tail = (1 - confidence) / 2;
  // P(B <= k) for B ~ Binomial(n, 1/2), summed in log space (0.5^n underflows past n ~ 1070).
  let logPmf = -n * Math.LN2; // P(B = 0)
  let below = 0; // P(B <= k - 1)
  let j = 0; // 1-based rank of the lower bound; 0 while even x(1) is too high
  for (let k = 0; k < n; k++) {
    below += Math.exp(logPmf); // now P(B <= k)
    if (below > tail) break;
    j = k + 1;
    logPmf += Math.log((n - k) / (k + 1));
  }
  return j === 0 ? [sorted[0]!, sorted[n - 1]!] : [sorted[j - 1]!, sorted[n - j]!];
}

/** "median (min–max)" of a figure over rounds or pairs. */
export function spread(values: readonly number[], digits: number): string {
  const f = (x: number): string => x.toFixed(digits);
  return `${f(median(values))} (${f(Math.min(...values))}–${f(Math.max(...values))})`;
}

/** The machine's 1, 5 and 15 minute load averages, as every suite prints them. */
export function loadAverage(): string {
  return `load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(', ')}`;
}
