import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The order `npm test` hands files to its two workers. The default run (the main job at its
 * default size) keeps both cores busy for minutes, so it starts first and the other worker runs
 * files that mostly wait on brokers and timers beside it; the other CPU-bound files come last,
 * when the default run is done. Order only: any file may still run beside any other.
 */
const FIRST = ['test/cli/run.slow.test.ts'];
const LAST = [
  'test/trainer/pytest.slow.test.ts',
  'test/scripts/spa-check.slow.test.ts',
  'test/hostile/orphans.slow.test.ts',
  'test/cli/gpu-check-run.slow.test.ts',
  'test/cli/gpu-check-cpu.test.ts',
];

const rank = (spec: TestSpecification): number => {
  const file = spec.moduleId;
  if (FIRST.some((suffix) => file.endsWith(suffix))) return 0;
  return LAST.some((suffix) => file.endsWith(suffix)) ? 2 : 1;
};

export class LanesSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    // Array.prototype.sort is stable: within a rank, vitest's own order (slowest first) stays.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}
