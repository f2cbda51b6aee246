import { describe, expect, it } from 'vitest';
import { armOrder, fairShare, GOAL, shareRatios } from '../../bench/trainer-share.js';

describe('fairShare', () => {
  it('is the alone tok/s times the free cores over the cores', () => {
    expect(fairShare(40_000, 2, 1)).toBe(20_000); // the 2-core box: alone × 1/2
    expect(fairShare(40_000, 4, 1)).toBe(30_000);
    expect(fairShare(40_000, 2, 0)).toBe(40_000);
  });

  it('refuses a machine with no core left for the trainer', () => {
    expect(() => fairShare(40_000, 2, 2)).toThrow(/no core left/);
    expect(() => fairShare(40_000, 2, -1)).toThrow(RangeError);
  });
});

describe('shareRatios', () => {
  it("divides each round's busy tok/s by that round's fair share", () => {
    const rounds = [
      { alone: 40_000, busy: 16_000 },
      { alone: 30_000, busy: 3_000 },
    ];
    expect(shareRatios(rounds, 2, 1)).toEqual([0.8, 0.2]);
    expect(shareRatios(rounds, 2, 1)[0]).toBeGreaterThanOrEqual(GOAL);
  });
});

describe('armOrder', () => {
  it('rotates the arms by one each round, so each goes first in turn', () => {
    const arms = ['alone', 'default', 'loop'];
    expect(armOrder(arms, 0)).toEqual(['alone', 'default', 'loop']);
    expect(armOrder(arms, 1)).toEqual(['default', 'loop', 'alone']);
    expect(armOrder(arms, 2)).toEqual(['loop', 'alone', 'default']);
    expect(armOrder(arms, 3)).toEqual(arms);
  });
});
