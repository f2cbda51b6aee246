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
