/**
 * The Kafka anchor of bench/kafka.ts: Kafka's own Java client (bench/java/KafkaAnchor.java, run
 * on the broker's jars) producing the exact records the pipeline committed, in transactions of
 * the same records, and consuming the pipeline's topic with the same fetch settings, warm (the
 * figure is the median of the rounds after its warm-up rounds, all in one JVM).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { kafkaClasspath, kafkaInfraDir } from '../infra/kafka/jars.js';
import { javaExecutable, jvmFlags } from '../infra/kafka/tools.js';
import type { OutgoingRecord } from '../infra/kafka/client/transport.js';
import { median } from './stats.js';

/** One measured line of the table. */
export interface Rate {
  readonly what: string;
  readonly records: number;
  readonly bytes: number;
  readonly seconds: number;
  /** CPU seconds spent meanwhile by the client (ours: this process; Java: its JVM) and the local broker. */
  readonly cpu?: { readonly client: number | undefined; readonly broker: number | undefined };
}

type Compression = 'gzip' | 'none';

/** Rounds of each Java run: the first ones warm the JVM, its connections and the broker up. */
const JAVA_WARMUP_ROUNDS = 2;
const JAVA_TIMED_ROUNDS = 3;

/**
 * Kafka's producer as our sink runs: acks=all, idempotent, transactional (the transactional.id is
 * given per run), the same codec. kafkajs sends a transaction's records in one request with one
 * batch per partition; Java's producer does the same when its batches wait for the commit's
 * flush (linger up to the 100 ms a transaction stays open, publish-outbound.ts) and hold up to
 * 1 MiB (a partition's share of a 1,024-record transaction is ~650 KB before compression).
 * Everything else is Java's default (5 requests in flight, which its idempotence allows).
 */
const javaProducerProps = (compression: Compression): string[] => [
  'acks=all',
  'enable.idempotence=true',
  `compression.type=${compression}`,
  'linger.ms=100',
  `batch.size=${1 << 20}`,
];

/**
 * Kafka's consumer as readTopic reads: read_committed, up to 4 MiB per partition and 32 MiB per
 * fetch (consume-spa.ts, kafkajs-source.ts), the broker holding an empty fetch up to 250 ms.
 */
const JAVA_CONSUMER_PROPS = [
  'isolation.level=read_committed',
  `max.partition.fetch.bytes=${4 << 20}`,
  `fetch.max.bytes=${32 << 20}`,
  'fetch.max.wait.ms=250',
];

const anchorSource = join(fileURLToPath(new URL('.', import.meta.url)), 'java', 'KafkaAnchor.java');

const u16Text = (text: string): Buffer[] => {
  const bytes = Buffer.from(text, 'utf8');
  const length = Buffer.alloc(2);
  length.writeUInt16BE(bytes.length);
  return [length, bytes];
};

const int32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

const sized = (bytes: Buffer | null): Buffer[] =>
  bytes === null ? [int32(-1)] : [int32(bytes.length), bytes];

/**
 * Writes `transactions` in the length-prefixed layout KafkaAnchor.java reads (its header comment):
 * binary keys, values and headers as they are, which a `--payload-file` of delimited text could
 * not carry. Topics are written without `topicPrefix` (the Java side adds its own).
 */
export function writeTransactions(
  path: string,
  transactions: readonly (readonly OutgoingRecord[])[],
  topicPrefix: string,
): void {
  const parts: Buffer[] = [int32(transactions.length)];
  for (const transaction of transactions) {
    parts.push(int32(transaction.length));
    for (const record of transaction) {
      if (!record.topic.startsWith(topicPrefix))
        throw new Error(`record topic ${record.topic} is not under ${topicPrefix}`);
      const headers = Object.entries(record.headers ?? {});
      parts.push(
        ...u16Text(record.topic.slice(topicPrefix.length)),
        ...sized(record.key),
        ...sized(record.value),
      );
      parts.push(int32(headers.length));
      for (const [name, value] of headers) parts.push(...u16Text(name), ...sized(value));
    }
  }
  writeFileSync(path, Buffer.concat(parts));
}

/** One round as KafkaAnchor.java prints it. */
interface JavaRound {
  readonly warmup: boolean;
  readonly records: number;
  readonly bytes: number;
  readonly seconds: number;
  readonly cpu: number;
  readonly brokerCpu: number | null;
}

/** Runs KafkaAnchor.java to completion and returns its rounds; rejects with its stderr when it fails. */
async function runAnchor(args: readonly string[]): Promise<JavaRound[]> {
  const classpath = await kafkaClasspath((line) => console.error(line));
  const argv = [
    ...jvmFlags(join(kafkaInfraDir, 'data', 'tools'), '-Xmx1g'),
    ...['-cp', classpath, anchorSource],
    ...args,
  ];
  const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>(
    (resolve, reject) => {
      const child = spawn(javaExecutable(), argv, { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (err = (err + chunk.toString('utf8')).slice(-4000)));
      child.on('error', (error) => reject(new Error(`cannot launch ${javaExecutable()}: ${error.message}`)));
      child.on('exit', (exit) => resolve({ code: exit ?? 1, stdout: out, stderr: err }));
    },
  );
  const rounds = stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as JavaRound);
  if (code !== 0 || rounds.length !== JAVA_WARMUP_ROUNDS + JAVA_TIMED_ROUNDS)
    throw new Error(`KafkaAnchor.java ${args[0]} failed (exit ${code}): ${stderr}`);
  return rounds;
}

/** The timed rounds as one Rate: the median round by records/s, with its CPU. */
function steadyRate(what: string, rounds: readonly JavaRound[]): Rate {
  const timed = rounds.filter((r) => !r.warmup);
  const rate = median(timed.map((r) => r.records / r.seconds));
  const { records, bytes } = timed[0]!;
  return {
    what: `${what} (median of ${timed.length} warm rounds)`,
    records,
    bytes,
    seconds: records / rate,
    cpu: {
      client: median(timed.map((r) => r.cpu)),
      broker: timed.every((r) => r.brokerCpu !== null) ? median(timed.map((r) => r.brokerCpu!)) : undefined,
    },
  };
}

const commonArgs = (brokers: readonly string[], brokerPid: number | undefined): string[] => [
  ...['--bootstrap', brokers.join(',')],
  ...['--warmup', String(JAVA_WARMUP_ROUNDS), '--rounds', String(JAVA_TIMED_ROUNDS)],
  ...(brokerPid === undefined ? [] : ['--broker-pid', String(brokerPid)]),
];

/** Kafka's Java producer sending the transactions in `file` to `topicPrefix` + each record's topic. */
export async function javaProducer(
  brokers: readonly string[],
  options: { file: string; topicPrefix: string; compression: Compression; brokerPid?: number },
): Promise<Rate> {
  const rounds = await runAnchor([
    'produce',
    ...commonArgs(brokers, options.brokerPid),
    ...['--file', options.file, '--topic-prefix', options.topicPrefix],
    ...['--transactional-id', `bench-java-${options.topicPrefix}`],
    ...javaProducerProps(options.compression).flatMap((p) => ['--prop', p]),
  ]);
  return steadyRate('Java KafkaProducer, same records and tx', rounds);
}

/** Kafka's Java consumer reading `records` records of `topic` from its beginning. */
export async function javaConsumer(
  brokers: readonly string[],
  options: { topic: string; records: number; brokerPid?: number },
): Promise<Rate> {
  const rounds = await runAnchor([
    'consume',
    ...commonArgs(brokers, options.brokerPid),
    ...['--topic', options.topic, '--records', String(options.records)],
    ...JAVA_CONSUMER_PROPS.flatMap((p) => ['--prop', p]),
  ]);
  return steadyRate('Java KafkaConsumer, same topic', rounds);
}
