// `node scripts/setup.mjs kafka`: provisions the Kafka broker jars from Maven Central
// (infra/kafka/pom.xml -> infra/kafka/dist/libs). Optional: infra/kafka/broker.ts does the
// same lazily on first start; this step just moves the one-time download out of the tests.
// Delegates to infra/kafka/jars.ts so the provisioning logic exists once.
import { join } from 'node:path';
import { logged, step } from './setup-step.mjs';

step('jars', () => {
  logged('npx', ['tsx', join('infra', 'kafka', 'cli.ts'), 'jars']);
  return 'Kafka jars ready in infra/kafka/dist/libs';
});
