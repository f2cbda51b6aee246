/**
 * `npx tsx infra/kafka/cli.ts start|stop|status|topics|jars` — the user's handle on the local
 * broker (npm run kafka:start / kafka:stop). Ports and names come from the environment:
 * KAFKA_PORT (default 9092), KAFKA_INSTANCE (default "default"); with KAFKA_BROKERS set,
 * `start` and `topics` use that cluster and start nothing.
 */
import { Command } from 'commander';
import { spaTopics } from '../../schemas/topics.js';
import type { BrokerInstanceOptions } from './broker-config.js';
import { brokerStatus, ensureBroker, stopBroker } from './broker.js';
import { ensureJars } from './jars.js';
import { applyTopicsTo } from './topics.js';

function instanceFromEnv(): BrokerInstanceOptions {
  const port = process.env.KAFKA_PORT;
  return {
    name: process.env.KAFKA_INSTANCE ?? 'default',
    ...(port === undefined ? {} : { port: Number(port) }),
  };
}

const program = new Command('kafka').description('local Apache Kafka broker (KRaft) for the SPA pipeline');

program
  .command('start')
  .description('start the broker (provisions jars, formats storage on first use) and apply SPA topics')
  .option('--no-topics', 'do not create/alter the SPA topics')
  .action(async (options: { topics: boolean }) => {
    const broker = await ensureBroker(instanceFromEnv());
    if (options.topics) {
      const report = await applyTopicsTo(broker.brokers, spaTopics());
      console.error(`[kafka] topics: ${report.summary}`);
    }
    console.log(broker.brokers.join(','));
  });

program
  .command('stop')
  .description('stop the broker cleanly (SIGTERM, SIGKILL after 30 s)')
  .action(async () => {
    console.error(`[kafka] ${await stopBroker(instanceFromEnv())}`);
  });

program
  .command('jars')
  .description('provision the Kafka jars from Maven Central into infra/kafka/dist/libs (idempotent)')
  .action(async () => {
    console.log(await ensureJars((line) => console.error(line)));
  });

program
  .command('status')
  .description('is the broker process alive and answering?')
  .action(async () => {
    const status = await brokerStatus(instanceFromEnv());
    const where = `${status.instance.host}:${status.instance.port}`;
    console.log(
      status.answering
        ? `running: pid ${status.pid}, answering on ${where}, data in ${status.instance.dataDir}`
        : status.processAlive
          ? `starting or stuck: pid ${status.pid}, not answering on ${where}`
          : `stopped (data in ${status.instance.dataDir})`,
    );
    if (!status.answering) process.exitCode = 3;
  });

program
  .command('topics')
  .description('create missing SPA topics and align their configs (idempotent)')
  .action(async () => {
    const broker = await ensureBroker(instanceFromEnv());
    console.log((await applyTopicsTo(broker.brokers, spaTopics())).summary);
  });

program.parseAsync(process.argv).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 1;
});
