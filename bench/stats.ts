import { loadavg } from 'node:os';

/** The median (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
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
