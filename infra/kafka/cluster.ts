/**
 * A local Apache Kafka cluster: `brokers` KRaft nodes on 127.0.0.1, one JVM each, every node both
 * a broker and a voter of the controller quorum, so three nodes keep serving (and keep a quorum)
 * when any one of them dies. Node i (from 1) takes client port `port + 2(i-1)` and the port after
 * it for the quorum; its data lives in `<dataRoot>/<name>/node-<i>/` (an instance of broker.ts),
 * and `<dataRoot>/<name>/cluster.json` records the cluster id and shape, so a restarted node,
 * `status` and `stop` find the same nodes. Replication is Kafka's own: the broker configs
 * (broker-config.ts) and the topic apply (topics.ts) size it to the cluster.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomClusterId, type BrokerInstanceOptions } from './broker-config.js';
import { brokerStatus, startBroker, stopBroker, type BrokerStartOptions } from './broker.js';
import { kafkaClasspath, kafkaInfraDir, kafkaVersion } from './jars.js';
import { brokerAnswers } from './probe.js';

/** Which local cluster; the shape is needed for a first start and read from cluster.json after. */
export interface ClusterOptions {
  /** Data lives in `<dataRoot>/<name>/`. Default `default-cluster`. */
  readonly name?: string;
  /** Root of instance data dirs. Default `infra/kafka/data`. */
  readonly dataRoot?: string;
  /** How many nodes (1..5). Default: what cluster.json records. */
  readonly brokers?: number;
  /** Client port of node 1. Default: what cluster.json records, else 9092. */
  readonly port?: number;
}

/** Options for starting a local cluster. */
export interface ClusterStartOptions
  extends ClusterOptions, Pick<BrokerStartOptions, 'startTimeoutMs' | 'heap' | 'log' | 'kafkaVersion'> {
  /** Delete the cluster's data first (tests that need a clean cluster). Default false. */
  readonly fresh?: boolean;
}

/** One node as `status` finds it. */
export interface ClusterNodeStatus {
  readonly id: number;
  readonly port: number;
  readonly controllerPort: number;
  readonly pid: number | undefined;
  readonly answering: boolean;
  readonly dataDir: string;
  /** The Apache Kafka release it runs, when it runs. */
  readonly kafkaVersion: string | undefined;
}

/** A running local cluster. */
export interface RunningCluster {
  /** Bootstrap addresses of every node, node 1 first. */
  readonly brokers: readonly string[];
  readonly clusterId: string;
  readonly nodes: readonly ClusterNodeStatus[];
}

/** What cluster.json records. */
interface ClusterShape {
  readonly clusterId: string;
  readonly brokers: number;
  readonly port: number;
}

const stderrLog = (line: string): void => console.error(line);

function clusterDir(options: ClusterOptions): string {
  const name = options.name ?? 'default-cluster';
  if (!/^[A-Za-z0-9._-]+$/.test(name))
    throw new Error(`cluster name "${name}" must be a plain folder name (letters, digits, . _ -)`);
  return join(options.dataRoot ?? join(kafkaInfraDir, 'data'), name);
}

function readShape(options: ClusterOptions): ClusterShape | undefined {
  const file = join(clusterDir(options), 'cluster.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as ClusterShape) : undefined;
}

/** Whether a local cluster of these options has ever been started (its cluster.json exists). */
export function clusterExists(options: ClusterOptions = {}): boolean {
  return readShape(options) !== undefined;
}

function checkBrokers(brokers: number): number {
  // A quorum of every node: 3 tolerates one loss, 5 two; more voters only slow the quorum down.
  if (!Number.isInteger(brokers) || brokers < 1 || brokers > 5)
    throw new Error(`a local cluster of ${brokers} brokers: expected an integer 1..5 (3 survives one loss)`);
  return brokers;
}

/** The shape asked for, checked against the one on disk: a quorum's voters are fixed when it is formatted. */
function shapeOf(options: ClusterOptions): Omit<ClusterShape, 'clusterId'> {
  const recorded = readShape(options);
  const brokers = checkBrokers(options.brokers ?? recorded?.brokers ?? 1);
  const port = options.port ?? recorded?.port ?? 9092;
  if (recorded && (recorded.brokers !== brokers || recorded.port !== port))
    throw new Error(
      `the cluster in ${clusterDir(options)} has ${recorded.brokers} brokers from port ${recorded.port}, ` +
        `asked for ${brokers} from port ${port}; stop it and delete that folder to change its shape`,
    );
  return { brokers, port };
}

/** Each node's instance options (ports, folder, node id, the quorum), node 1 first. */
export function clusterNodes(options: ClusterOptions = {}): BrokerInstanceOptions[] {
  const { brokers, port } = shapeOf(options);
  const ids = Array.from({ length: brokers }, (_, i) => i + 1);
  const portOf = (id: number): number => port + 2 * (id - 1);
  const quorum = ids.map((id) => ({ id, controllerPort: portOf(id) + 1 }));
  return ids.map((id) => ({
    name: `node-${id}`,
    dataRoot: clusterDir(options),
    port: portOf(id),
    controllerPort: portOf(id) + 1,
    nodeId: id,
    quorum,
  }));
}

/** Every node's id, ports, pid and whether it answers; nothing is started. */
export async function clusterStatus(options: ClusterOptions = {}): Promise<ClusterNodeStatus[]> {
  return Promise.all(
    clusterNodes(options).map(async (node) => {
      const status = await brokerStatus(node);
      return {
        id: status.instance.nodeId,
        port: status.instance.port,
        controllerPort: status.instance.controllerPort,
        pid: status.pid,
        answering: status.answering,
        dataDir: status.instance.dataDir,
        kafkaVersion: status.kafkaVersion,
      };
    }),
  );
}

/**
 * Polls until every node reports `count` live brokers; false after `timeoutMs`. Each node's
 * metadata catches up with the cluster's a moment apart: asking one node is not enough, as a
 * client that then asks a lagging one (for instance to size a new topic's replication) would
 * see fewer brokers.
 */
async function waitForBrokers(
  brokers: readonly string[],
  count: number,
  timeoutMs: number,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const answers = await Promise.all(brokers.map((broker) => brokerAnswers([broker], 2000, count)));
    if (answers.every(Boolean)) return true;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return false;
}

/**
 * Starts every node (formatting fresh storage with the cluster's one id) and resolves once the
 * cluster reports all of them as live brokers. Idempotent: running nodes are kept. A node that
 * fails to start stops the others and the error carries its log tails.
 */
export async function startCluster(options: ClusterStartOptions): Promise<RunningCluster> {
  const log = options.log ?? stderrLog;
  const dir = clusterDir(options);
  if (options.fresh) {
    // The nodes on disk, whatever shape is asked for now: a fresh start may change it.
    const onDisk = { ...options, brokers: undefined, port: undefined };
    const running = (await clusterStatusIfAny(onDisk)).filter((node) => node.pid !== undefined);
    if (running.length > 0)
      throw new Error(`cluster in ${dir} is running (node ${running[0]?.id}); stop it before a fresh start`);
    rmSync(dir, { recursive: true, force: true });
  }
  const { brokers, port } = shapeOf(options);
  mkdirSync(dir, { recursive: true });
  const clusterId = readShape(options)?.clusterId ?? randomClusterId();
  writeFileSync(join(dir, 'cluster.json'), `${JSON.stringify({ clusterId, brokers, port })}\n`);
  const version = kafkaVersion(options.kafkaVersion);
  await kafkaClasspath(log, version); // provision once here, not in every node's start at the same time
  const nodes = clusterNodes(options);
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  // All at once: no node answers before a majority of the quorum is up.
  const started = await Promise.allSettled(
    nodes.map((node) =>
      startBroker({
        ...node,
        clusterId,
        startTimeoutMs: timeoutMs,
        log,
        heap: options.heap,
        kafkaVersion: version,
      }),
    ),
  );
  const failed = started.find((outcome) => outcome.status === 'rejected');
  const bootstrap = started.flatMap((outcome) =>
    outcome.status === 'fulfilled' ? outcome.value.brokers : [],
  );
  if (failed || !(await waitForBrokers(bootstrap, brokers, timeoutMs))) {
    await stopCluster(options);
    throw failed
      ? (failed.reason as Error)
      : new Error(
          `the ${brokers} nodes of ${dir} started but did not form one cluster within ${timeoutMs} ms`,
        );
  }
  const nodeStatus = await clusterStatus(options);
  log(
    `[kafka] cluster ${clusterId} (Apache Kafka ${nodeStatus[0]?.kafkaVersion}): ${brokers} brokers on ${bootstrap.join(',')}`,
  );
  return { brokers: bootstrap, clusterId, nodes: nodeStatus };
}

async function clusterStatusIfAny(options: ClusterOptions): Promise<ClusterNodeStatus[]> {
  return clusterExists(options) ? clusterStatus(options) : [];
}

/**
 * Stops every node at once (SIGTERM, Kafka's controlled shutdown; SIGKILL after `timeoutMs`): one
 * at a time, the last nodes would wait for a quorum that already left. A cluster never started is
 * a no-op.
 */
export async function stopCluster(
  options: ClusterOptions & { timeoutMs?: number } = {},
): Promise<Awaited<ReturnType<typeof stopBroker>>[]> {
  if (!clusterExists(options)) return [];
  return Promise.all(
    clusterNodes(options).map((node) => stopBroker({ ...node, timeoutMs: options.timeoutMs })),
  );
}
