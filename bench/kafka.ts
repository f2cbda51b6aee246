/**
 * `npm run bench -- kafka [--trajectories n] [--keep]`: the pipeline's Kafka throughput beside
 * Kafka's own perf tools on the same broker in the same run.
 *
 * - ingest: random policy → annotate → filter → Avro → transactional Kafka writes (the whole
 *   generator, generatorPipeline + publishOutbound), vs ProducerPerformance with the same
 *   record count and mean record size (acks=all, idempotent, transactional, gzip);
 * - replay read: spa.trajectories read_committed through readTopic and Avro-decoded, vs
 *   ConsumerPerformance on the same topic (read_committed); plus a full `replay` (read →
 *   annotate → filter → SftRows → transactional writes) for scale.
 *
 * Broker: KAFKA_BROKERS' cluster, or a local instance "bench" on 19460 (reused when running,
 * stopped again when started here). Topics are per run (`bench-<id>.*`) and deleted afterwards.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { lastValueFrom, map, toArray } from 'rxjs';
import { envFactory } from '../envs/registry.js';
import { brokerStatus, ensureBroker, stopBroker } from '../infra/kafka/broker.js';
import { kafkaConfigFromEnv } from '../infra/kafka/client-config.js';
import { connectKafkajsAdmin } from '../infra/kafka/kafkajs-client.js';
import { runKafkaTool } from '../infra/kafka/tools.js';
import { applyTopicsTo } from '../infra/kafka/topics.js';
import type { Outbound } from '../schemas/outbound.js';
import { spaTopicNames, spaTopics } from '../schemas/topics.js';
import { episodeConfig } from '../streams/episodes/episode-config.js';
import { generatorPipeline } from '../streams/generator-pipeline.js';
import { readTopic, type KafkaConnection } from '../streams/kafka/consume-spa.js';
import { kafkajsTransport } from '../streams/kafka/kafkajs-adapter.js';
import { publishOutbound } from '../streams/kafka/publish-outbound.js';
import { replayTrajectories } from '../streams/kafka/replay.js';
import { decodeKafkaRecord, toKafkaRecord } from '../streams/kafka/spa-records.js';
import { builtinPolicy } from '../streams/policies/builtin.js';
import { outboundTraceparent } from '../streams/telemetry/episode-key.js';

const BENCH_INSTANCE = { name: 'bench', port: 19460, controllerPort: 19461 };

/** One measured line of the table. */
interface Rate {
  readonly what: string;
  readonly records: number;
  readonly bytes: number;
  readonly seconds: number;
}

const perSecond = (n: number, seconds: number): number => n / Math.max(seconds, 1e-9);
const mb = (bytes: number): number => bytes / (1024 * 1024);

function parseArgs(args: string[]): { trajectories: number; keep: boolean } {
  const at = args.indexOf('--trajectories');
  const trajectories = at >= 0 ? Number(args[at + 1]) : 1024;
  if (!Number.isInteger(trajectories) || trajectories < 8 || trajectories % 8 !== 0)
    throw new Error(`--trajectories ${args[at + 1]} must be a multiple of 8 (groups of 8), at least 8`);
  return { trajectories, keep: args.includes('--keep') };
}

async function ingest(
  kafka: KafkaConnection,
  topics: ReturnType<typeof spaTopicNames>,
  trajectories: number,
) {
  const config = episodeConfig({
    env: 'sokoban',
    groups: trajectories / 8,
    groupSize: 8,
    batches: 1,
    runId: 'bench',
    mode: 'wm',
  });
  const outputs = generatorPipeline(
    config,
    envFactory({ name: 'sokoban', puzzles: 'generated' }),
    builtinPolicy('random', { mode: 'wm', seed: 1 }),
    { target: 'sft' },
  );
  const sink = await kafka.transport.sink({ transactionalId: `bench-ingest-${topics.sft}` });
  const written: Outbound[] = [];
  const started = performance.now();
  await publishOutbound(outputs, sink, {
    topics,
    onCommitted: (chunk) => void written.push(...chunk),
    traceparent: outboundTraceparent,
  });
  const seconds = (performance.now() - started) / 1000;
  await sink.close();
  // Sizes are measured after the clock stopped, so encoding them twice costs the run nothing.
  const bytes = written.reduce((sum, o) => {
    const record = toKafkaRecord(o, topics[o.topic]);
    return sum + (record.value?.length ?? 0) + (record.key?.length ?? 0);
  }, 0);
  return { what: 'ingest: generator → Avro → Kafka (tx)', records: written.length, bytes, seconds };
}

async function producerPerformance(brokers: readonly string[], topic: string, records: number, size: number) {
  const result = await runKafkaTool('producerPerf', [
    ...[
      '--topic',
      topic,
      '--num-records',
      String(records),
      '--record-size',
      String(size),
      '--throughput',
      '-1',
    ],
    ...['--transactional-id', `bench-perf-${topic}`, '--transaction-duration-ms', '100'],
    '--producer-props',
    `bootstrap.servers=${brokers.join(',')}`,
    ...['acks=all', 'enable.idempotence=true', 'compression.type=gzip'],
  ]);
  // Last summary line: "N records sent, X records/sec (Y MB/sec), …"
  const line = result.stdout
    .split('\n')
    .find((l) => /records sent, .* records\/sec/.test(l) && l.includes('avg latency'));
  const match = line && /([\d.]+) records\/sec \(([\d.]+) MB\/sec\)/.exec(line);
  if (result.exitCode !== 0 || !match)
    throw new Error(`ProducerPerformance failed (exit ${result.exitCode}): ${result.stderr.slice(-1000)}`);
  const perSec = Number(match[1]);
  return {
    what: 'Kafka ProducerPerformance (same n/size)',
    records,
    bytes: records * size,
    seconds: records / perSec,
  };
}

async function replayRead(kafka: KafkaConnection, topic: string): Promise<Rate> {
  const read = await readTopic(kafka, { topic, start: { kind: 'earliest' }, maxInFlight: 1024 });
  const started = performance.now();
  let last = started;
  const sizes = await lastValueFrom(
    read.records.pipe(
      map(({ record, ack }) => {
        ack();
        if (!decodeKafkaRecord('Trajectory', record).ok)
          throw new Error(`undecodable record at ${record.offset}`);
        last = performance.now();
        return (record.value?.length ?? 0) + (record.key?.length ?? 0);
      }),
      toArray(),
    ),
  );
  await read.closed;
  // Up to the last record: the quiet period that ends a read of a transactional topic is not reading.
  const seconds = (last - started) / 1000;
  return {
    what: 'replay read: readTopic + Avro decode',
    records: sizes.length,
    bytes: sizes.reduce((a, b) => a + b, 0),
    seconds,
  };
}

async function consumerPerformance(
  brokers: readonly string[],
  topic: string,
  records: number,
): Promise<Rate> {
  const dir = mkdtempSync(join(tmpdir(), 'spa-bench-'));
  const properties = join(dir, 'consumer.properties');
  writeFileSync(properties, 'isolation.level=read_committed\n');
  try {
    const result = await runKafkaTool('consumerPerf', [
      ...['--bootstrap-server', brokers.join(','), '--topic', topic, '--messages', String(records)],
      ...['--group', `bench-cp-${topic}`, '--timeout', '60000', '--consumer.config', properties],
    ]);
    // Header then "start, end, MB, MB.sec, nMsg, nMsg.sec, rebalance.ms, fetch.ms, fetch.MB.sec, fetch.nMsg.sec".
    const values =
      result.stdout
        .trim()
        .split('\n')
        .pop()
        ?.split(',')
        .map((v) => v.trim()) ?? [];
    const [consumedMb, consumed, fetchMs] = [Number(values[2]), Number(values[4]), Number(values[7])];
    if (result.exitCode !== 0 || !Number.isFinite(fetchMs) || !(consumed > 0))
      throw new Error(
        `ConsumerPerformance failed (exit ${result.exitCode}): ${result.stdout}${result.stderr.slice(-1000)}`,
      );
    return {
      what: 'Kafka ConsumerPerformance (fetch time)',
      records: consumed,
      bytes: consumedMb * 1024 * 1024,
      seconds: fetchMs / 1000,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function printTable(rows: readonly (Rate | string)[]): void {
  const header = ['', 'records', 'MB', 'seconds', 'records/s', 'MB/s'];
  const cells = rows.map((r) =>
    typeof r === 'string'
      ? [r]
      : [
          r.what,
          String(r.records),
          mb(r.bytes).toFixed(2),
          r.seconds.toFixed(2),
          perSecond(r.records, r.seconds).toFixed(0),
          mb(perSecond(r.bytes, r.seconds)).toFixed(2),
        ],
  );
  const widths = header.map((h, i) =>
    Math.max(h.length, ...cells.map((c) => (c.length > 1 ? (c[i] ?? '').length : 0))),
  );
  const line = (c: string[]): string =>
    c.length === 1
      ? c[0]!
      : c.map((v, i) => (i === 0 ? v.padEnd(widths[i]!) : v.padStart(widths[i]!))).join('  ');
  console.log([line(header), ...cells.map(line)].join('\n'));
}

const ratio = (ours: Rate, theirs: Rate): string =>
  `  ratio ours/Kafka: ${(perSecond(ours.records, ours.seconds) / perSecond(theirs.records, theirs.seconds)).toFixed(2)}× records/s, ` +
  `${(perSecond(ours.bytes, ours.seconds) / perSecond(theirs.bytes, theirs.seconds)).toFixed(2)}× MB/s`;

/** Runs the suite; see the module comment. */
export async function run(args: string[]): Promise<void> {
  const options = parseArgs(args);
  const external = Boolean(process.env.KAFKA_BROKERS?.trim());
  const wasRunning = !external && (await brokerStatus(BENCH_INSTANCE)).answering;
  const broker = await ensureBroker(BENCH_INSTANCE);
  const config = kafkaConfigFromEnv(process.env, { brokers: [...broker.brokers], clientId: 'spa-bench' });
  const prefix = `bench-${Date.now().toString(36)}.`;
  const topics = spaTopicNames({ prefix });
  const perfTopic = `${prefix}perf`;
  await applyTopicsTo(
    config.brokers,
    [
      ...spaTopics({ prefix }),
      { ...spaTopics({ prefix }).find((t) => t.role === 'trajectories')!, name: perfTopic },
    ],
    config,
  );
  const kafka: KafkaConnection = { transport: kafkajsTransport(config), config };
  try {
    console.error(
      `[bench kafka] ${options.trajectories} trajectories on ${config.brokers.join(',')} (topics ${prefix}*)`,
    );
    const ours = await ingest(kafka, topics, options.trajectories);
    const theirs = await producerPerformance(
      config.brokers,
      perfTopic,
      ours.records,
      Math.round(ours.bytes / ours.records),
    );
    const read = await replayRead(kafka, topics.trajectories);
    const consumer = await consumerPerformance(config.brokers, topics.trajectories, read.records);
    const replayStarted = performance.now();
    const replay = await replayTrajectories(kafka, {
      fromTopic: topics.trajectories,
      toTopic: `${prefix}replay`,
      dlqTopic: topics.dlq,
      start: { kind: 'earliest' },
      annotation: 'gt',
      log: () => {},
    });
    const replaySeconds = (performance.now() - replayStarted) / 1000;
    printTable([
      ours,
      theirs,
      ratio(ours, theirs),
      read,
      consumer,
      ratio(read, consumer),
      {
        what: 'full replay → SftRows (tx), incl. setup',
        records: replay.read,
        bytes: read.bytes,
        seconds: replaySeconds,
      },
    ]);
  } finally {
    await kafka.transport.close();
    if (!options.keep) await deleteTopics(kafka, prefix);
    if (!external && !wasRunning) await stopBroker(BENCH_INSTANCE);
  }
}

async function deleteTopics(kafka: KafkaConnection, prefix: string): Promise<void> {
  const admin = await connectKafkajsAdmin(kafka.config);
  try {
    const mine = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
    if (mine.length > 0) await admin.deleteTopics({ topics: mine });
  } finally {
    await admin.disconnect();
  }
}
