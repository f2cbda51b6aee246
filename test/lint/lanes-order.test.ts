/**
 * The order npm test hands files to its two workers (test/lanes-sequencer.ts): the default run
 * first, the other CPU-bound files last and longest first, and each of them a file that exists, so
 * that a rename cannot drop one back into vitest's own order.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FIRST, LAST, rank } from '../lanes-sequencer.js';

describe("npm test's file order", () => {
  it('names files that exist', () => {
    for (const file of [...FIRST, ...LAST]) expect(existsSync(file), file).toBe(true);
  });

  it('starts the default run, ends with the CPU-bound files in their listed order', () => {
    const files = [
      'test/cli/gpu-check-run.slow.test.ts',
      'test/kafka/tap.slow.test.ts',
      'test/trainer/pytest.slow.test.ts',
      'test/cli/run.slow.test.ts',
      'test/hostile/orphans.slow.test.ts',
    ].map((f) => ({ moduleId: `/clone/${f}` }));
    const sorted = [...files].sort((a, b) => rank(a) - rank(b)).map((s) => s.moduleId.slice(7));
    expect(sorted).toEqual([
      'test/cli/run.slow.test.ts',
      'test/kafka/tap.slow.test.ts',
      'test/trainer/pytest.slow.test.ts',
      'test/hostile/orphans.slow.test.ts',
      'test/cli/gpu-check-run.slow.test.ts',
    ]);
  });
});
