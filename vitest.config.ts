import { defineConfig } from 'vitest/config';
import { LanesSequencer } from './test/lanes-sequencer.js';

// Two projects so slow suites (real Kafka broker, Python trainer) can run on their own:
// `npm run test:unit`, `npm run test:slow`; `npm test` runs both, two files at a time (each slow
// file has brokers, ports and folders of its own), in the order of test/lanes-sequencer.ts. Its
// pretest provisions the venv and the jars first: files provisioning them side by side raced (pip).
export default defineConfig({
  test: {
    maxWorkers: 2,
    sequence: { sequencer: LanesSequencer },
    // Failing tests are named again in the run's last lines (CI logs are read from the tail).
    reporters: ['default', './test/failures-last-reporter.ts'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: ['test/**/*.slow.test.ts', 'node_modules/**'],
          // Some unit suites spawn the CLI; a busy 2-core box needs more than vitest's 5 s.
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'slow',
          include: ['test/**/*.slow.test.ts'],
          testTimeout: 600_000,
          hookTimeout: 600_000,
        },
      },
    ],
  },
});
