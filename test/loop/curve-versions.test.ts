import { describe, expect, it } from 'vitest';
import { curveVersions } from '../../loop/evaluate.js';

describe('curveVersions', () => {
  it('keeps the first, the final and every version at a multiple of evalEvery steps', () => {
    // v1 = PPO step 0, one export per step: v21 = step 20, …; the final v62 follows step 61.
    const versions = Array.from({ length: 62 }, (_, i) => i + 1);
    expect(curveVersions(versions, 62, { exportEvery: 1, evalEvery: 20 })).toEqual([1, 21, 41, 61, 62]);
  });

  it('counts steps, not versions, when exports are several steps apart', () => {
    // exportEvery 5: v3 = step 10, v5 = step 20.
    expect(curveVersions([5, 1, 2, 3, 4], 5, { exportEvery: 5, evalEvery: 10 })).toEqual([1, 3, 5]);
    expect(curveVersions([1, 2, 3, 4], 4, { exportEvery: 5, evalEvery: 10 })).toEqual([1, 3, 4]);
  });

  it('keeps every version when evalEvery is 0', () => {
    expect(curveVersions([3, 1, 2], 3, { exportEvery: 10, evalEvery: 0 })).toEqual([1, 2, 3]);
  });
});
