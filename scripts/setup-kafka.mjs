// `node scripts/setup.mjs kafka`: provisions the Kafka broker jars from Maven Central
// (infra/kafka/pom.xml -> infra/kafka/dist/libs). Optional: infra/kafka/broker.ts does the
// same lazily on first start; this step just moves the one-time download out of the tests.
// Delegates to infra/kafka/jars.ts so the provisioning logic exists once.
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
execFileSync('npx', ['tsx', join('infra', 'kafka', 'cli.ts'), 'jars'], {
  cwd: root,
  stdio: ['ignore', 'ignore', 'inherit'],
});
