/**
 * `npx tsx infra/kafka/cli.ts start [--brokers n]|stop|status|topics|jars` — the user's handle on
 * the local broker or cluster (npm run kafka:start / kafka:stop / kafka:status). Ports and names
 * come from the environment as for every command (local-instance.ts): KAFKA_PORT (default 9092; a
 * cluster's node 1), KAFKA_INSTANCE (default "default"; its cluster lives in "<instance>-cluster"),
 * SPA_KAFKA_VERSION (default pom.xml's release); with KAFKA_BROKERS set, `start`, `status` and
 * `topics` use that cluster and start nothing.
 */
import { Command, InvalidArgumentError } from 'commander';
import { spaTopics } from '../../schemas/topics.js';
import { brokerStatus, ensureBroker, stopBroker } from './broker.js';
import { clusterExists, clusterStatus, startCluster, stopCluster, type ClusterOptions } from './cluster.js';
import { ensureJars, kafkaVersion } from './jars.js';
import { parseBrokerList } from './client/config.js';
import { foreignBrokerMessage, localInstanceFromEnv } from './local-instance.js';
import { brokerAnswers } from './probe.js';
import { applyTopicsTo } from './topics.js';

/** The local cluster beside the single instance: same port, its own folder. */
function clusterFromEnv(brokers?: number): ClusterOptions {
  const { name, port } = localInstanceFromEnv();
  return {
    name: `${name}-cluster`,
    ...(port === undefined ? {} : { port }),
    ...(brokers ? { brokers } : {}),
  };
}

/** Bootstrap addresses and the Apache Kafka release they run (unknown for KAFKA_BROKERS' cluster). */
interface Started {
  readonly brokers: readonly string[];
  readonly kafkaVersion?: string | undefined;
}

/** The running local cluster, if one runs. */
async function runningCluster(): Promise<Started | undefined> {
  if (process.env.KAFKA_BROKERS?.trim() || !clusterExists(clusterFromEnv())) return undefined;
  const nodes = (await clusterStatus(clusterFromEnv())).filter((node) => node.answering);
  return nodes.length > 0
    ? { brokers: nodes.map((node) => `127.0.0.1:${node.port}`), kafkaVersion: nodes[0]?.kafkaVersion }
    : undefined;
}

/** KAFKA_BROKERS, else a running local cluster, else the local broker (started if needed). */
async function startedBrokers(count: number): Promise<Started> {
  if (count > 1 && !process.env.KAFKA_BROKERS?.trim()) {
    const cluster = await startCluster(clusterFromEnv(count));
    return { brokers: cluster.brokers, kafkaVersion: cluster.nodes[0]?.kafkaVersion };
  }
  return (await runningCluster()) ?? (await ensureBroker(localInstanceFromEnv()));
}

function brokerCount(value: string): number {
  const count = Number(value);
  if (!Number.isInteger(count) || count < 1 || count > 5)
    throw new InvalidArgumentError('expected an integer 1..5 (3 brokers survive the loss of one)');
  return count;
}

const program = new Command('kafka')
  .description('local Apache Kafka broker or cluster (KRaft) for the SPA pipeline')
  .hook('preAction', () => {
    try {
      kafkaVersion();
      localInstanceFromEnv();
    } catch (error) {
      // A bad SPA_KAFKA_VERSION or KAFKA_PORT is a usage error (exit 2, commander's), not a failed start.
      program.error((error as Error).message, { exitCode: 2 });
    }
  });

program
  .command('start')
  .description('start the broker (provisions jars, formats storage on first use) and apply SPA topics')
  .option(
    '--brokers <n>',
    'a local cluster of n brokers (3: replication 3, min.insync.replicas 2)',
    brokerCount,
    1,
  )
  .option('--no-topics', 'do not create/alter the SPA topics')
  .action(async (options: { topics: boolean; brokers: number }) => {
    if (options.brokers > 1 && process.env.KAFKA_BROKERS?.trim())
      console.error(`[kafka] KAFKA_BROKERS is set: using it, --brokers ${options.brokers} starts nothing`);
    const { brokers, kafkaVersion } = await startedBrokers(options.brokers);
    console.error(
      `[kafka] ${kafkaVersion ? `Apache Kafka ${kafkaVersion}` : 'KAFKA_BROKERS'} on ${brokers.join(',')}`,
    );
    if (options.topics) {
      const report = await applyTopicsTo(brokers, spaTopics());
      console.error(`[kafka] topics: ${report.summary}`);
    }
    console.log(brokers.join(','));
  });

program
  .command('stop')
  .description('stop the broker and the local cluster cleanly (SIGTERM, SIGKILL after 30 s)')
  .action(async () => {
    console.error(`[kafka] ${await stopBroker(localInstanceFromEnv())}`);
    const nodes = await stopCluster(clusterFromEnv());
    if (nodes.length > 0) console.error(`[kafka] cluster: ${nodes.join(', ')}`);
  });

program
  .command('jars')
  .description(
    "provision the Kafka jars ($SPA_KAFKA_VERSION, else pom.xml's) from Maven Central into infra/kafka/dist/libs (idempotent)",
  )
  .action(async () => {
    console.log(await ensureJars((line) => console.error(line)));
  });

program
  .command('status')
  .description(
    "the running brokers (local broker and cluster; KAFKA_BROKERS' when set) as JSON: id, port, pid, answering",
  )
  .action(async () => {
    const configured = process.env.KAFKA_BROKERS?.trim();
    if (configured) {
      // The cluster every command would use: nothing local is asked about.
      const brokers = parseBrokerList(configured);
      const answering = await brokerAnswers(brokers, 3000);
      console.log(JSON.stringify([{ brokers, external: true, answering }]));
      if (!answering) process.exitCode = 3;
      return;
    }
    const single = await brokerStatus(localInstanceFromEnv());
    const running = [
      ...(single.pid === undefined
        ? []
        : [
            {
              id: single.instance.nodeId,
              port: single.instance.port,
              controllerPort: single.instance.controllerPort,
              pid: single.pid,
              answering: single.answering,
              dataDir: single.instance.dataDir,
              kafkaVersion: single.kafkaVersion,
            },
          ]),
      ...(clusterExists(clusterFromEnv()) ? await clusterStatus(clusterFromEnv()) : []).filter(
        (node) => node.pid !== undefined,
      ),
    ];
    console.log(JSON.stringify(running));
    const { port, name } = single.instance;
    if (running.length === 0 && (await brokerAnswers([`127.0.0.1:${port}`], 1000)))
      console.error(`[kafka] ${foreignBrokerMessage(`127.0.0.1:${port}`, name, port)}`);
    if (running.length === 0 || running.some((broker) => !broker.answering)) process.exitCode = 3;
  });

program
  .command('topics')
  .description('create missing SPA topics and align their configs (idempotent)')
  .action(async () => {
    console.log((await applyTopicsTo((await startedBrokers(1)).brokers, spaTopics())).summary);
  });

program.parseAsync(process.argv).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exitCode = 1;
});
