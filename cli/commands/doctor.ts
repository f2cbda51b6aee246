/**
 * `spa doctor`: checks what the pipeline needs on this machine — Node, Java and Maven (for the
 * local broker), the Kafka jars, the broker every command would use (KAFKA_BROKERS, else the local
 * instance of KAFKA_INSTANCE and KAFKA_PORT) answering with the environment's settings (SASL, TLS),
 * the trainer's Python environment (torch, confluent_kafka), onnxruntime-node, Chromium (browser
 * test) — and prints one OK/WARN/FAIL line each with what to do. Exit code 1 when a required
 * piece fails. `--gpu` runs the GPU check instead (cli/gpu-check/, docs/gpu.md).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { kafkaConfigFromEnv } from '../../infra/kafka/client/config.js';
import type { KafkaConnectionConfig } from '../../infra/kafka/client/config.js';
import { KafkaCredentialsRefused, KafkaTlsFailure } from '../../infra/kafka/client/connect-failure.js';
import { brokerInstance, type BrokerInstance } from '../../infra/kafka/broker-config.js';
import { brokerStatus } from '../../infra/kafka/broker.js';
import { jarsProvisioned, kafkaInfraDir, kafkaVersion } from '../../infra/kafka/jars.js';
import { foreignBroker, localInstanceFromEnv } from '../../infra/kafka/local-instance.js';
import { openKafkaAdmin } from '../../infra/kafka/client/kafka-client.js';
import { loadOnnxRuntime } from '../../policies/onnx/runtime-check.js';
import { GPU_CHECKS, formatGpuTable, type GpuCheckName } from '../gpu-check/rows.js';
import { listOf, oneOf, positiveInt } from '../options.js';
import { COMMAND_SUMMARIES } from './summaries.js';

/** One check's outcome; `fix` says what to do when it is not OK. */
export interface DoctorCheck {
  readonly name: string;
  readonly status: 'ok' | 'warn' | 'fail';
  readonly detail: string;
  readonly fix?: string;
}

const repoRoot = join(kafkaInfraDir, '..', '..');
/** Where scripts/setup-python.mjs puts the trainer's interpreter. */
const trainerPython = join(repoRoot, 'trainer', '.venv', 'bin', 'python');
const CHROMIUM = '/usr/bin/chromium';

/** Runs a program; resolves with its exit code and output (never rejects: ENOENT is code null). */
function probe(
  cmd: string,
  args: string[],
  timeoutMs = 20_000,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    let out = '';
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs });
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', (error) => resolve({ code: null, out: error.message }));
    child.on('close', (code) => resolve({ code, out: out.trim() }));
  });
}

const ok = (name: string, detail: string): DoctorCheck => ({ name, status: 'ok', detail });
const bad = (name: string, status: 'warn' | 'fail', detail: string, fix: string): DoctorCheck => ({
  name,
  status,
  detail,
  fix,
});

function checkNode(): DoctorCheck {
  const major = Number(process.versions.node.split('.')[0]);
  return major >= 20
    ? ok('node', `Node ${process.versions.node}`)
    : bad('node', 'fail', `Node ${process.versions.node}`, 'install Node 20 or newer');
}

/** Java and Maven matter only for the local broker; with KAFKA_BROKERS they are optional. */
async function checkJava(remote: boolean): Promise<DoctorCheck> {
  const { code, out } = await probe('java', ['-version']);
  const version = /version "([^"]+)"/.exec(out)?.[1];
  const major = Number(version?.split('.')[0]);
  const level = remote ? 'warn' : 'fail';
  if (code !== 0 || !version)
    return bad(
      'java',
      level,
      `no java on PATH (${out.split('\n')[0]})`,
      'apt-get install -y openjdk-17-jre-headless',
    );
  if (major < 17)
    return bad(
      'java',
      level,
      `Java ${version}`,
      'the broker needs Java 17+: apt-get install -y openjdk-17-jre-headless',
    );
  return ok('java', `Java ${version}`);
}

async function checkMaven(remote: boolean): Promise<DoctorCheck> {
  const { code, out } = await probe('mvn', ['-v']);
  // eslint-disable-next-line no-control-regex -- Maven colours its banner
  const line = out.split('\n')[0]?.replace(/\x1b\[[0-9;]*m/g, '') ?? '';
  if (code === 0) return ok('maven', line);
  // Once the jars are in place Maven is no longer needed.
  const needed = !remote && !jarsProvisioned();
  return bad(
    'maven',
    needed ? 'fail' : 'warn',
    'no mvn on PATH',
    'apt-get install -y maven (fetches the Kafka jars from Maven Central)',
  );
}

function checkJars(remote: boolean): DoctorCheck {
  const version = kafkaVersion();
  return jarsProvisioned(version)
    ? ok('kafka jars', `Apache Kafka ${version} in infra/kafka/dist/libs/${version}`)
    : bad(
        'kafka jars',
        remote ? 'warn' : 'fail',
        `Kafka ${version} jars not provisioned`,
        'node scripts/setup.mjs kafka (or npm run kafka:start)',
      );
}

/**
 * One metadata round trip with the environment's settings (SASL, TLS), no retries: refused
 * credentials and TLS failures are reported as such, not as a broker that does not answer.
 */
async function connectOnce(config: KafkaConnectionConfig): Promise<unknown> {
  try {
    const admin = await openKafkaAdmin(config);
    try {
      await admin.brokers();
    } finally {
      await admin.close().catch(() => undefined);
    }
    return undefined;
  } catch (error) {
    return error;
  }
}

/**
 * The broker every command would use (KAFKA_BROKERS, else the local instance of KAFKA_INSTANCE and
 * KAFKA_PORT), asked once with the environment's settings (SASL, TLS); a local port answered by a
 * broker this checkout did not start is named as someone else's.
 */
export async function checkBroker(env: NodeJS.ProcessEnv, remote: boolean): Promise<DoctorCheck> {
  let config: KafkaConnectionConfig;
  let local: BrokerInstance | undefined;
  try {
    local = remote ? undefined : brokerInstance(localInstanceFromEnv(env));
    config = kafkaConfigFromEnv(env, {
      ...(local ? { brokers: [`${local.host}:${local.port}`] } : {}),
      clientId: 'spa-doctor',
      connectionTimeoutMs: 3000,
      requestTimeoutMs: 3000,
      retry: { retries: 0, initialRetryTimeMs: 300, maxRetryTimeMs: 3000 },
    });
  } catch (error) {
    const settings = 'fix that setting (infra/kafka/client/README.md, "Client settings")';
    return bad('broker', 'fail', (error as Error).message, settings);
  }
  const brokers = config.brokers.join(',');
  const failure = await connectOnce(config);
  if (failure === undefined && local) return ownBroker(local, brokers);
  if (failure === undefined) return ok('broker', `answering at ${brokers}`);
  if (failure instanceof KafkaCredentialsRefused)
    return bad(
      'broker',
      'fail',
      `authentication failed: ${failure.message}`,
      'check KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD and KAFKA_SASL_MECHANISM',
    );
  if (failure instanceof KafkaTlsFailure)
    return bad(
      'broker',
      'fail',
      failure.message,
      "check KAFKA_SSL_CA_LOCATION (the CA that signed the brokers' certificates) and KAFKA_BROKERS",
    );
  // The local broker is started on demand by every command; a remote one must be up.
  return remote
    ? bad(
        'broker',
        'fail',
        `KAFKA_BROKERS=${brokers} does not answer`,
        'start that cluster or fix KAFKA_BROKERS',
      )
    : bad(
        'broker',
        'warn',
        `nothing answers at ${brokers}`,
        'npm run kafka:start (commands also start it on demand)',
      );
}

/** The local port answers: this checkout's instance, or someone else's broker. */
async function ownBroker(local: BrokerInstance, address: string): Promise<DoctorCheck> {
  const status = await brokerStatus({ name: local.name, port: local.port });
  if (status.pid !== undefined)
    return ok(
      'broker',
      `instance "${local.name}" (pid ${status.pid}, ${local.dataDir}) answering at ${address}`,
    );
  const { detail, fix } = foreignBroker(address, local.name, local.port);
  return bad('broker', 'warn', detail, fix);
}

async function checkTrainer(): Promise<DoctorCheck> {
  const fix = 'node scripts/setup.mjs python (creates trainer/.venv with torch and confluent_kafka)';
  if (!existsSync(trainerPython)) return bad('trainer python', 'fail', `no venv at ${trainerPython}`, fix);
  const script = 'import torch, confluent_kafka; print(torch.__version__, confluent_kafka.version()[0])';
  const { code, out } = await probe(trainerPython, ['-c', script], 120_000);
  if (code !== 0) return bad('trainer python', 'fail', out.split('\n').at(-1) ?? 'import failed', fix);
  const [torch, kafka] = out.split('\n').at(-1)!.split(' ');
  return ok('trainer python', `torch ${torch}, confluent_kafka ${kafka}`);
}

async function checkOnnxRuntime(): Promise<DoctorCheck> {
  try {
    await loadOnnxRuntime();
    return ok('onnxruntime-node', 'native binding loads');
  } catch (error) {
    return bad(
      'onnxruntime-node',
      'fail',
      (error as Error).message.split('\n')[0] ?? '',
      'npm ci (with ONNXRUNTIME_NODE_INSTALL=skip offline)',
    );
  }
}

function checkChromium(): DoctorCheck {
  return existsSync(CHROMIUM)
    ? ok('chromium', `${CHROMIUM} (browser test of spa tap --web)`)
    : bad(
        'chromium',
        'warn',
        `no ${CHROMIUM}`,
        'apt-get install -y chromium (the browser test installs it itself when run as root)',
      );
}

/** Runs every check; `env` supplies KAFKA_BROKERS and the other connection settings. */
async function runDoctor(env: NodeJS.ProcessEnv = process.env): Promise<DoctorCheck[]> {
  const remote = Boolean(env.KAFKA_BROKERS?.trim());
  const [java, maven, broker, trainer, onnx] = await Promise.all([
    checkJava(remote),
    checkMaven(remote),
    checkBroker(env, remote),
    checkTrainer(),
    checkOnnxRuntime(),
  ]);
  return [checkNode(), java, maven, checkJars(remote), broker, trainer, onnx, checkChromium()];
}

/** The report as aligned lines: `OK   name  detail` plus `→ fix` under anything not OK. */
export function formatDoctor(checks: readonly DoctorCheck[]): string {
  const width = Math.max(...checks.map((c) => c.name.length));
  return checks
    .map((c) => {
      const line = `${c.status.toUpperCase().padEnd(4)} ${c.name.padEnd(width)}  ${c.detail}`;
      return c.fix && c.status !== 'ok' ? `${line}\n${' '.repeat(width + 7)}→ ${c.fix}` : line;
    })
    .join('\n');
}

interface DoctorOptions {
  json: boolean;
  gpu: boolean;
  device: 'cpu' | 'cuda';
  models: ('tiny-local' | '25m')[];
  checks: GpuCheckName[];
  tokens: number;
}

/** `spa doctor --gpu`: the table, then one verdict line; exit 1 when a check fails. */
async function gpuDoctor(options: DoctorOptions): Promise<void> {
  // loaded only for --gpu: the plain doctor needs none of the check's modules
  const { runGpuCheck } = await import('../gpu-check/gpu-check.js');
  const rows = await runGpuCheck(
    options,
    (text) => (options.json ? console.error(text) : console.log(text)),
    (row) => console.error(`[gpu-check] ${row.check}: ${row.result}`),
  );
  console.log(options.json ? JSON.stringify(rows, null, 2) : `\n${formatGpuTable(rows)}`);
  const failed = rows.filter((r) => r.result === 'fail').length;
  const skipped = rows.filter((r) => r.result === 'skipped').length;
  const verdict = failed ? `\n${failed} check(s) FAIL` : `\nno check failed (${skipped} skipped)`;
  (options.json ? console.error : console.log)(verdict); // --json: stdout is the JSON alone
  if (failed) process.exitCode = 1;
}

/** `spa doctor [--json]`, `spa doctor --gpu [--device cpu]`. */
export function registerDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description(COMMAND_SUMMARIES.doctor)
    .option('--json', 'print the checks as JSON', false)
    .option(
      '--gpu',
      'check the CUDA path instead: trainer, export, onnxruntime-node, torchrun, spa run (docs/gpu.md)',
      false,
    )
    .option(
      '--device <device>',
      'with --gpu: cuda, or cpu for the same checks on CPU',
      oneOf('--device', ['cuda', 'cpu'] as const),
      'cuda',
    )
    .option(
      '--models <list>',
      'with --gpu: tiny-local, 25m',
      listOf('--models', ['tiny-local', '25m'] as const),
      ['tiny-local', '25m'],
    )
    .option('--checks <list>', `with --gpu: ${GPU_CHECKS.join(', ')}`, listOf('--checks', GPU_CHECKS), [
      ...GPU_CHECKS,
    ])
    .option(
      '--tokens <n>',
      'with --gpu: new tokens per row of the onnxruntime check',
      positiveInt('--tokens', 4096),
      64,
    )
    .action(async (options: DoctorOptions) => {
      if (options.gpu) return gpuDoctor(options);
      const checks = await runDoctor();
      console.log(options.json ? JSON.stringify(checks, null, 2) : formatDoctor(checks));
      const failed = checks.filter((c) => c.status === 'fail');
      if (!options.json)
        console.log(
          failed.length === 0 ? '\nall required pieces OK' : `\n${failed.length} required piece(s) FAIL`,
        );
      if (failed.length > 0) process.exitCode = 1;
    });
}
