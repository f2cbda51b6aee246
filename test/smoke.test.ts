import { describe, expect, it } from 'vitest';
import { Rng } from '../envs/rng.js';

describe('Rng', () => {
  it('is deterministic per seed and differs across seeds', () => {
    const draw = (seed: number) => {
      const rng = new Rng(seed);
      return Array.from({ length: 8 }, () => rng.int(0, 1000));
    };
    expect(draw(7)).toEqual(draw(7));
    expect(draw(7)).not.toEqual(draw(8));
  });
});
