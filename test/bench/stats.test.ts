import { describe, expect, it } from 'vitest';
import { median, medianInterval, quantile } from '../../bench/stats.js';

describe('medianInterval', () => {
  const ranks = (n: number) => Array.from({ length: n }, (_, i) => i + 1); // x(k) = k

  it('picks the order statistics of the binomial tables at 95%', () => {
    // The largest j with P(Binomial(n, 1/2) <= j - 1) <= 2.5%, from exact binomial sums (Python's
    // math.comb): n = 10 → x(2)..x(9), 20 → x(6)..x(15), 60 → x(22)..x(39), 100 → x(40)..x(61).
    expect(medianInterval(ranks(10), 0.95)).toEqual([2, 9]);
    expect(medianInterval(ranks(20), 0.95)).toEqual([6, 15]);
    expect(medianInterval(ranks(60), 0.95)).toEqual([22, 39]);
    expect(medianInterval(ranks(100), 0.95)).toEqual([40, 61]);
  });

  it('is the whole range when there are too few values, and narrows as confidence falls', () => {
    expect(medianInterval([3, 1, 2, 5, 4], 0.95)).toEqual([1, 5]);
    const [low50, high50] = medianInterval(ranks(100), 0.5);
    expect(low50).toBeGreaterThan(40);
    expect(high50).toBeLessThan(61);
  });

  it('sorts its input, keeps the median inside, and survives counts where 0.5^n underflows', () => {
    const values = ranks(2001).map((k) => ((k * 7919) % 2001) + 0.5);
    const [low, high] = medianInterval(values, 0.95);
    expect(low).toBeLessThan(median(values));
    expect(high).toBeGreaterThan(median(values));
    expect(high - low).toBeLessThan(100); // ~ ±1.96·√n/2 ranks around 1001
  });

  it('refuses a confidence outside (0, 1) and an empty list', () => {
    expect(() => medianInterval([1, 2], 1)).toThrow(/confidence 1/);
    expect(() => medianInterval([], 0.95)).toThrow(/no values/);
  });
});

describe('quantile', () => {
  it('interpolates between order statistics', () => {
    expect(quantile([4, 1, 3, 2], 0.5)).toBe(2.5);
    expect(quantile([1, 2, 3, 4, 5], 0.25)).toBe(2);
  });
});
