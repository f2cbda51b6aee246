import type { KnipConfig } from 'knip';

/**
 * `npm run lint:unused`: files, exports and dependencies nothing uses. The entry points are
 * everything that runs on its own; knip follows their imports, and what it never reaches is
 * reported. Besides the entries below, knip's plugins read package.json's scripts
 * (infra/kafka/cli.ts, schemas/codegen.ts), vitest.config.ts (itself and its reporter,
 * test/failures-last-reporter.ts) and eslint.config.js (itself), so they are not repeated here.
 */
const config: KnipConfig = {
  entry: [
    'bin/*.mjs', // spa (cli/main.ts, built by scripts/cli-build.mjs), bench (bench/main.ts through tsx)
    'cli/main.ts',
    'bench/main.ts',
    'scripts/*.{ts,mjs}', // setup, learning-check, ppo-check
    'test/**/*.test.ts',
    'test/fixtures/avro/write-golden.ts', // run by hand when a schema version is added (schemas/README.md)
    'test/fixtures/kafkajs/write-golden.ts', // run by hand to freeze kafkajs wire bytes (infra/kafka/client/README.md)
    'web/app.js', // served by web/server/tap-server.ts, loaded by the browser
  ],
  project: ['**/*.{ts,mjs,cjs,js}'],
  // Programs the code runs that are not npm packages: Maven builds the broker's jars when it is
  // installed (infra/kafka/jars.ts); apt-get installs Chromium's libraries for the browser test
  // (test/web/chromium.ts); openssl makes the TLS suite's CA and certificates
  // (test/hostile/secured-pki.ts).
  ignoreBinaries: ['mvn', 'apt-get', 'openssl', 'nvidia-smi'],
};

export default config;
