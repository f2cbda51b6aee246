/**
 * Lifecycle of a local Apache Kafka broker (KRaft, one JVM acting as broker and controller,
 * bound to 127.0.0.1) of the version jars.ts names (pom.xml's, or `$SPA_KAFKA_VERSION`): start
 * (provisioning jars and formatting storage on first use), status,
 * clean stop, and kill -9 for crash tests. `ensureBroker` honours KAFKA_BROKERS: when it is
 * set, that cluster is used and nothing is started. The npm scripts, the main job and the
 * tests all go through this module.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { tryLock } from '../process/lock-file.js';
import { brokerInstance, randomClusterId, scramFormatArgs, serverProperties } from './broker-config.js';
import type { BrokerInstance, BrokerInstanceOptions } from './broker-config.js';
import { parseBrokerList } from './client/config.js';
import { kafkaClasspath, kafkaVersion } from './jars.js';
import { foreignBrokerMessage, localInstanceFromEnv } from './local-instance.js';
import { brokerAnswers, waitUntilAnswering } from './probe.js';
import { javaExecutable, jvmFlags, runKafkaTool } from './tools.js';

export type { BrokerInstanceOptions } from './broker-config.js';

/** Options for starting a local instance. */
export interface BrokerStartOptions extends BrokerInstanceOptions {
  /** How long to wait for the broker to answer a metadata request. Default 60 s. */
  readonly startTimeoutMs?: number;
  /** Delete the instance's data dir first (tests that need a clean cluster). Default false. */
  readonly fresh?: boolean;
  /** JVM heap flags. Default `$KAFKA_HEAP_OPTS` or `-Xms256m -Xmx512m`. */
  readonly heap?: string;
  /** Progress lines (provisioning, formatting, started). Default: stderr. */
  readonly log?: (line: string) => void;
  /** The KRaft cluster id a fresh storage is formatted with (a cluster's nodes share one). Default: a new one. */
  readonly clusterId?: string;
  /** The Apache Kafka release to run, e.g. `3.9.1`. Default: `$SPA_KAFKA_VERSION`, else pom.xml's. */
  readonly kafkaVersion?: string;
}

/** A broker the caller can talk to. */
export interface RunningBroker {
  /** Bootstrap addresses for PLAINTEXT clients. */
  readonly brokers: readonly string[];
  /** Bootstrap addresses of the SASL/SCRAM listener, when configured. */
  readonly saslBrokers: readonly string[];
  /** Bootstrap addresses of the TLS listener, when configured. */
  readonly sslBrokers: readonly string[];
  /** True when this is KAFKA_BROKERS' cluster and nothing was started here. */
  readonly external: boolean;
  /** The local instance, absent for an external cluster. */
  readonly instance?: BrokerInstance;
  readonly pid?: number;
  /** The Apache Kafka release the local instance runs; absent for an external cluster. */
  readonly kafkaVersion?: string;
}

/** What `status` finds. */
export interface BrokerStatus {
  readonly instance: BrokerInstance;
  readonly pid: number | undefined;
  readonly processAlive: boolean;
  readonly answering: boolean;
  /** The Apache Kafka release the running JVM was launched with. */
  readonly kafkaVersion: string | undefined;
}

const stderrLog = (line: string): void => console.error(line);

function readPid(instance: BrokerInstance): number | undefined {
  if (!existsSync(instance.pidFile)) return undefined;
  const pid = Number(readFileSync(instance.pidFile, 'utf8').trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

/** Alive and really this instance's JVM (guards against a recycled PID; zombies have no cmdline). */
function isInstanceProcess(instance: BrokerInstance, pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const cmdlineFile = `/proc/${pid}/cmdline`;
  if (!existsSync('/proc/self/cmdline')) return true; // no procfs (macOS): trust the PID file
  try {
    return readFileSync(cmdlineFile, 'utf8').includes(instance.propertiesFile);
  } catch {
    return false;
  }
}

function addresses(instance: BrokerInstance): {
  brokers: string[];
  saslBrokers: string[];
  sslBrokers: string[];
} {
  return {
    brokers: [`${instance.host}:${instance.port}`],
    saslBrokers: instance.saslPort === undefined ? [] : [`${instance.host}:${instance.saslPort}`],
    sslBrokers: instance.ssl === undefined ? [] : [`${instance.host}:${instance.ssl.port}`],
  };
}

function tail(file: string, lines: number): string {
  if (!existsSync(file)) return `(no ${file})`;
  return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
}

function failureReport(instance: BrokerInstance): string {
  return (
    `--- ${instance.consoleFile} (tail) ---\n${tail(instance.consoleFile, 20)}\n` +
    `--- ${instance.serverLogFile} (tail) ---\n${tail(instance.serverLogFile, 30)}`
  );
}

/** The file naming the Kafka release the instance's JVM runs (written at launch). */
const versionFile = (instance: BrokerInstance): string => join(instance.dataDir, 'kafka-version');
/** The file naming the Kafka release that formatted the instance's storage. */
const formatVersionFile = (instance: BrokerInstance): string => join(instance.dataDir, 'formatted-by');

function readVersion(file: string): string | undefined {
  return existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
}

/** Orders release numbers: negative when `a` is older than `b`. */
function compareVersions(a: string, b: string): number {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  for (let i = 0; i < Math.max(x?.length ?? 0, y?.length ?? 0); i++) {
    const d = (x?.[i] ?? 0) - (y?.[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * Refuses to run storage written by a newer Kafka with an older one: its metadata version is one
 * the older broker cannot read, and the broker would only die with that deep in its log.
 */
function checkDowngrade(instance: BrokerInstance, version: string): void {
  const recorded = readVersion(formatVersionFile(instance));
  if (recorded !== undefined && compareVersions(version, recorded) < 0)
    throw new Error(
      `broker "${instance.name}" has storage written by Apache Kafka ${recorded}; ${version} cannot run it ` +
        `(SPA_KAFKA_VERSION): choose another instance (KAFKA_INSTANCE) or delete ${instance.dataDir}`,
    );
}

/** Formats KRaft storage with a fresh cluster id unless meta.properties is already there. */
async function formatStorageOnce(
  instance: BrokerInstance,
  log: (line: string) => void,
  version: string,
  clusterId = randomClusterId(),
): Promise<void> {
  if (existsSync(join(instance.logDir, 'meta.properties'))) return;
  log(`[kafka] formatting storage in ${instance.logDir} (Apache Kafka ${version}, cluster ${clusterId})`);
  const args = [
    'format',
    '-t',
    clusterId,
    '-c',
    instance.propertiesFile,
    ...scramFormatArgs(instance.scramUsers),
  ];
  const result = await runKafkaTool('storage', args, { logsDir: instance.dataDir, kafkaVersion: version });
  if (result.exitCode !== 0)
    throw new Error(
      `kafka-storage format failed (exit ${result.exitCode}):\n${result.stdout}${result.stderr}`,
    );
  writeFileSync(formatVersionFile(instance), `${version}\n`);
}

async function launch(instance: BrokerInstance, heap: string, version: string): Promise<number> {
  const classpath = await kafkaClasspath(undefined, version);
  const out = openSync(instance.consoleFile, 'a');
  const argv = [
    ...jvmFlags(instance.dataDir, heap),
    '-XX:+ExitOnOutOfMemoryError',
    '-cp',
    classpath,
    'kafka.Kafka',
    instance.propertiesFile,
  ];
  // Detached with its own output file, so the broker outlives `npm run kafka:start`.
  const child = spawn(javaExecutable(), argv, { detached: true, stdio: ['ignore', out, out] });
  closeSync(out);
  const pid = await new Promise<number>((resolve, reject) => {
    child.once('spawn', () => resolve(child.pid ?? -1));
    child.once('error', (error) => reject(new Error(`cannot launch ${javaExecutable()}: ${error.message}`)));
  });
  child.unref();
  writeFileSync(instance.pidFile, `${pid}\n`);
  writeFileSync(versionFile(instance), `${version}\n`);
  return pid;
}

function runningBroker(instance: BrokerInstance, pid: number): RunningBroker {
  return {
    ...addresses(instance),
    external: false,
    instance,
    pid,
    kafkaVersion: readVersion(versionFile(instance)),
  };
}

/**
 * Takes the instance's start lock (`<data>/<instance>.start.lock`, beside its data folder), waiting
 * while another live process holds it: two `spa run`s that find no broker at once would otherwise
 * launch two JVMs on one data folder and ports, and one of them dies during startup.
 */
async function holdStartLock(
  instance: BrokerInstance,
  log: (line: string) => void,
  timeoutMs: number,
): Promise<() => void> {
  const file = join(dirname(instance.dataDir), `${instance.name}.start.lock`);
  mkdirSync(dirname(file), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  for (let waiting = false; ; waiting = true) {
    const lock = tryLock(file);
    if ('release' in lock) return lock.release;
    if (!waiting)
      log(`[kafka] broker "${instance.name}" is being started by pid ${lock.pid}: waiting for it`);
    if (Date.now() > deadline)
      throw new Error(
        `broker "${instance.name}": pid ${lock.pid} has been starting it since ${lock.since} (${file}); ` +
          `stop that process, or wait for it`,
      );
    await sleep(250);
  }
}

/**
 * Starts the instance and resolves once it answers a metadata request. Idempotent: an
 * instance that is already up is returned as is, also to a process that waited while another
 * started it. Throws with the log tails when the broker dies or does not answer within
 * `startTimeoutMs`.
 */
export async function startBroker(options: BrokerStartOptions = {}): Promise<RunningBroker> {
  const log = options.log ?? stderrLog;
  const instance = brokerInstance(options);
  const timeoutMs = options.startTimeoutMs ?? 60_000;
  const release = await holdStartLock(instance, log, timeoutMs);
  try {
    return await startUnlocked(instance, options, log, timeoutMs);
  } finally {
    release();
  }
}

async function startUnlocked(
  instance: BrokerInstance,
  options: BrokerStartOptions,
  log: (line: string) => void,
  timeoutMs: number,
): Promise<RunningBroker> {
  const version = kafkaVersion(options.kafkaVersion);
  const existing = readPid(instance);
  if (existing !== undefined && isInstanceProcess(instance, existing)) {
    if (options.fresh)
      throw new Error(`broker "${instance.name}" is running (pid ${existing}); stop it before a fresh start`);
    const outcome = await waitUntilAnswering(addresses(instance).brokers, timeoutMs, () =>
      isInstanceProcess(instance, existing),
    );
    if (outcome === 'answering') return runningBroker(instance, existing);
    throw new Error(
      `broker "${instance.name}" (pid ${existing}) is up but not answering:\n${failureReport(instance)}`,
    );
  }
  rmSync(instance.pidFile, { force: true });
  const { brokers } = addresses(instance);
  if (await brokerAnswers(brokers, 1000))
    throw new Error(foreignBrokerMessage(brokers[0]!, instance.name, instance.port));
  if (options.fresh) rmSync(instance.dataDir, { recursive: true, force: true });
  checkDowngrade(instance, version);
  mkdirSync(instance.dataDir, { recursive: true });
  await kafkaClasspath(log, version);
  writeFileSync(instance.propertiesFile, serverProperties(instance));
  await formatStorageOnce(instance, log, version, options.clusterId);
  const started = Date.now();
  const heap = options.heap ?? process.env.KAFKA_HEAP_OPTS ?? '-Xms256m -Xmx512m';
  const pid = await launch(instance, heap, version);
  const outcome = await waitUntilAnswering(
    brokers,
    timeoutMs,
    () => isInstanceProcess(instance, pid),
    (seconds) =>
      log(
        `[kafka] waiting for broker "${instance.name}" on ${brokers[0]} to answer: ${seconds} s of up to ${timeoutMs / 1000} s`,
      ),
  );
  if (outcome !== 'answering') {
    if (outcome === 'timeout') await stopBroker(options);
    const why = outcome === 'died' ? 'exited during startup' : `did not answer within ${timeoutMs} ms`;
    throw new Error(`Kafka broker "${instance.name}" on ${brokers[0]} ${why}:\n${failureReport(instance)}`);
  }
  log(
    `[kafka] broker "${instance.name}" (Apache Kafka ${version}) answering on ${brokers[0]} ` +
      `(pid ${pid}, ${Date.now() - started} ms)`,
  );
  return runningBroker(instance, pid);
}

async function waitForExit(instance: BrokerInstance, pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isInstanceProcess(instance, pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return !isInstanceProcess(instance, pid);
}

/**
 * Stops the instance cleanly: SIGTERM (Kafka's controlled shutdown), wait up to `timeoutMs`,
 * SIGKILL as a last resort. Resolves to what was done; a stopped instance is a no-op.
 */
export async function stopBroker(
  options: BrokerInstanceOptions & { timeoutMs?: number } = {},
): Promise<'stopped' | 'killed' | 'not running'> {
  const instance = brokerInstance(options);
  const pid = readPid(instance);
  if (pid === undefined || !isInstanceProcess(instance, pid)) {
    rmSync(instance.pidFile, { force: true });
    return 'not running';
  }
  process.kill(pid, 'SIGTERM');
  let outcome: 'stopped' | 'killed' = 'stopped';
  if (!(await waitForExit(instance, pid, options.timeoutMs ?? 30_000))) {
    process.kill(pid, 'SIGKILL');
    await waitForExit(instance, pid, 10_000);
    outcome = 'killed';
  }
  rmSync(instance.pidFile, { force: true });
  return outcome;
}

/** Crash simulation for tests: SIGKILL (kill -9) with no shutdown, then wait until it is gone. */
export async function killBroker(options: BrokerInstanceOptions = {}): Promise<void> {
  const instance = brokerInstance(options);
  const pid = readPid(instance);
  if (pid === undefined || !isInstanceProcess(instance, pid))
    throw new Error(`broker "${instance.name}" is not running; nothing to kill`);
  process.kill(pid, 'SIGKILL');
  if (!(await waitForExit(instance, pid, 10_000)))
    throw new Error(`broker "${instance.name}" (pid ${pid}) survived SIGKILL for 10 s`);
}

/** Reports whether the instance's process is alive and whether it answers metadata requests. */
export async function brokerStatus(options: BrokerInstanceOptions = {}): Promise<BrokerStatus> {
  const instance = brokerInstance(options);
  const pid = readPid(instance);
  const processAlive = pid !== undefined && isInstanceProcess(instance, pid);
  const answering = processAlive && (await brokerAnswers(addresses(instance).brokers));
  const version = processAlive ? readVersion(versionFile(instance)) : undefined;
  return { instance, pid: processAlive ? pid : undefined, processAlive, answering, kafkaVersion: version };
}

/**
 * The broker the main job talks to: KAFKA_BROKERS' cluster when that is set (nothing is
 * started), otherwise the local instance (KAFKA_INSTANCE, KAFKA_PORT: local-instance.ts; `options`
 * win), started if needed.
 */
export async function ensureBroker(
  options: BrokerStartOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<RunningBroker> {
  return configuredCluster(env) ?? startBroker({ ...localInstanceFromEnv(env), ...options });
}

/**
 * The broker a read-only look (`spa topics`) talks to: KAFKA_BROKERS' cluster when set, otherwise
 * the local instance if it is running. Starts nothing; says what to do when there is none.
 */
export async function existingBroker(
  options: BrokerInstanceOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<RunningBroker> {
  const configured = configuredCluster(env);
  if (configured) return configured;
  const status = await brokerStatus({ ...localInstanceFromEnv(env), ...options });
  if (!status.answering || status.pid === undefined)
    throw new Error(
      `no broker to look at: KAFKA_BROKERS is not set and the local broker "${status.instance.name}" is not ` +
        `running (npm run kafka:start starts it; spa run starts it too)`,
    );
  return runningBroker(status.instance, status.pid);
}

/** KAFKA_BROKERS' cluster when the variable is set: nothing runs here for it. */
function configuredCluster(env: NodeJS.ProcessEnv): RunningBroker | undefined {
  const configured = env.KAFKA_BROKERS?.trim();
  return configured
    ? { brokers: parseBrokerList(configured), saslBrokers: [], sslBrokers: [], external: true }
    : undefined;
}
