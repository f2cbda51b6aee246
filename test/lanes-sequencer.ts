import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The order `npm test` hands files to its two workers. The default run (the main job at its
 * default size) keeps both cores busy for minutes, so it starts first and the other worker runs
 * files that mostly wait on brokers and timers beside it; the other CPU-bound files come last,
 * when the default run is done, longest first (seconds in a fresh clone's CI, each beside another
 * file): vitest's own order there is by file size, which left the pytest suite to run alone at the
 * end. That did not shorten the suite measurably (a fresh clone's vitest: 1,241 s before, 1,299 s
 * after with five more files); it fixes the order. Any file may still run beside any other.
 */
export const FIRST = ['test/cli/run.slow.test.ts'];
export const LAST = [
  'test/trainer/pytest.slow.test.ts', // 240 s alone, 407 s beside orphans
  'test/hostile/orphans.slow.test.ts', // 201 s
  'test/scripts/spa-check.slow.test.ts', // 199 s
  'test/cli/gpu-check-cpu.test.ts', // 65 s
  'test/cli/gpu-check-run.slow.test.ts', // 44 s
];

export const rank = (spec: Pick<TestSpecification, 'moduleId'>): number => {
  const file = spec.moduleId;
  if (FIRST.some((suffix) => file.endsWith(suffix))) return 0;
  const last = LAST.findIndex((suffix) => file.endsWith(suffix));
  return last < 0 ? 1 : 2 + last;
};

export class LanesSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    // Array.prototype.sort is stable: within the middle rank, vitest's own order stays.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}
