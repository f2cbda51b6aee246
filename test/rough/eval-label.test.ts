/** Issue 36 #8: `spa eval --policy random` printed "policy random v0", as if it were self-play v0. */
import { describe, expect, it } from 'vitest';
import { policyLabel } from '../../cli/commands/eval.js';

describe('policyLabel', () => {
  it('names built-in policies without a version', () => {
    expect(policyLabel('random', 0)).toBe('random');
    expect(policyLabel('oracle', 0)).toBe('oracle');
  });
  it('names a trained policy with its version', () => {
    expect(policyLabel('onnx', 0)).toBe('onnx v0');
    expect(policyLabel('onnx', 3)).toBe('onnx v3');
  });
});
