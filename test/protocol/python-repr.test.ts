import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { pyRepr, turnRewardText } from '../../envs/protocol/python-repr.js';

/** [value, CPython repr(value)] pairs written by fixtures/generate.py. */
const goldens = JSON.parse(
  readFileSync(new URL('./fixtures/python-float-repr.json', import.meta.url), 'utf8'),
) as [number, string][];

describe('pyRepr', () => {
  it('prints floats like Python, where JS differs', () => {
    expect(pyRepr(0, true)).toBe('0.0');
    expect(pyRepr(-0, true)).toBe('-0.0');
    expect(pyRepr(1, true)).toBe('1.0');
    expect(pyRepr(-0.1, true)).toBe('-0.1');
    expect(pyRepr(-0.1 + -0.1 + -0.1, true)).toBe('-0.30000000000000004');
    expect(pyRepr(10.9, true)).toBe('10.9');
    expect(pyRepr(1e-5, true)).toBe('1e-05');
    expect(pyRepr(1e-4, true)).toBe('0.0001');
    expect(pyRepr(1e16, true)).toBe('1e+16');
    expect(pyRepr(1e15, true)).toBe('1000000000000000.0');
    expect(pyRepr(1.5e-7, true)).toBe('1.5e-07');
    expect(pyRepr(1e21, true)).toBe('1e+21');
    expect(pyRepr(Infinity, true)).toBe('inf');
    expect(pyRepr(-Infinity, true)).toBe('-inf');
    expect(pyRepr(NaN, true)).toBe('nan');
  });

  it(`matches CPython's repr on ${goldens.length} golden doubles`, () => {
    const mismatches = goldens.filter(([value, python]) => pyRepr(value, true) !== python);
    expect(mismatches).toEqual([]);
  });

  it('prints ints as plain digits and refuses fractions', () => {
    expect(pyRepr(0, false)).toBe('0');
    expect(pyRepr(-0, false)).toBe('0');
    expect(pyRepr(1, false)).toBe('1');
    expect(pyRepr(1e21, false)).toBe('1000000000000000000000');
    expect(() => pyRepr(0.5, false)).toThrow(/0.5 is not an integer/);
  });
});

describe('turnRewardText (docs/spa-testvectors.md#env-manager reward strings)', () => {
  const sokobanSteps = (n: number) => Array.from({ length: n }, () => -0.1);
  it.each([
    [sokobanSteps(1), '-0.1'],
    [sokobanSteps(2), '-0.2'],
    [sokobanSteps(3), '-0.30000000000000004'],
    [sokobanSteps(4), '-0.4'],
    [sokobanSteps(5), '-0.5'],
    [[-0.1 + 1 + 10], '10.9'],
    [[-0.1, -0.1 + 1 + 10], '10.8'],
    [[-0.1 + -1], '-1.1'],
  ])('Sokoban float rewards %j → %s', (rewards, text) => {
    expect(turnRewardText(rewards, true)).toBe(text);
  });

  it('prints int 0 when no action ran, even for float envs', () => {
    expect(turnRewardText([], true)).toBe('0');
    expect(turnRewardText([], false)).toBe('0');
  });

  it('prints Sudoku floats and FrozenLake ints', () => {
    expect(turnRewardText([0, 0], true)).toBe('0.0');
    expect(turnRewardText([0, 1], true)).toBe('1.0');
    expect(turnRewardText([0], false)).toBe('0');
    expect(turnRewardText([0, 1], false)).toBe('1');
  });
});
