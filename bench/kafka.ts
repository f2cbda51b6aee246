/**
 * `npm run bench -- kafka [--trajectories n] [--repeat n] [--compression gzip|none] [--keep]`:
 * the pipeline's Kafka throughput beside Kafka's own perf tools on the same broker in the same run.
 *
 * - ingest: random policy → annotate → filter → Avro → transactional Kafka writes (the whole
 *   generator, generatorPipeline + publishOutbound, with the DemandGate `spa generate` uses), vs
 *   ProducerPerformance with the same record count and mean record size (acks=all, idempotent,
 *   transactional, one transaction per 100 ms, the same codec);
 * - replay read: spa.trajectories read_committed through readTopic and Avro-decoded, vs
 *   ConsumerPerformance on the same topic (read_committed); plus a full `replay` (read →
 *   annotate → filter → SftRows → transactional writes) for scale.
 *
 * `--repeat n` runs the whole round n times on fresh topics and ends with the median and range
 * of every figure and ratio; every round prints the load average, since a shared box's load
 * moves the absolute figures (the ratios of one round share it). Beside each figure: the CPU
 * seconds its client (this process, or the Kafka tool's JVM) and the local broker spent, which
 * move far less with load. Levers and their measured effects: infra/kafka/README.md#throughput. `--compression none` makes
 * both producers send uncompressed batches to topics that keep them as sent.
 *
 * Broker: KAFKA_BROKERS' cluster, or a local instance "bench" on 19460 (reused when running,
 * stopped again when started here). Topics are per round (`bench-<id>.*`) and deleted afterwards.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { lastValueFrom, map, toArray } from 'rxjs';
import { envFactory } from '../envs/registry.js';
import { brokerStatus, ensureBroker, stopBroker } from '../infra/kafka/broker.js';
import { kafkaConfigFromEnv, type KafkaConnectionConfig } from '../infra/kafka/client/config.js';
import { openKafkajsAdmin } from '../infra/kafka/client/kafkajs-admin.js';
import { runKafkaTool } from '../infra/kafka/tools.js';
import { applyTopicsTo } from '../infra/kafka/topics.js';
import type { Outbound } from '../schemas/outbound.js';
import { spaTopicNames, spaTopics, type TopicDefinition } from '../schemas/topics.js';
import { DemandGate, SINK_IN_FLIGHT_LIMIT } from '../streams/demand-gate.js';
import { episodeConfig } from '../streams/episodes/episode-config.js';
import { generatorPipeline } from '../streams/generator-pipeline.js';
import { readTopic, type KafkaConnection } from '../streams/kafka/consume-spa.js';
import { kafkaTransport } from '../infra/kafka/client/kafka-client.js';
import { publishOutbound } from '../streams/kafka/publish-outbound.js';
import { replayTrajectories } from '../streams/kafka/replay.js';
import { decodeKafkaRecord, toKafkaRecord } from '../streams/kafka/spa-records.js';
import { builtinPolicy } from '../policies/builtin.js';
import { outboundTraceparent } from '../streams/telemetry/episode-key.js';
import { loadAverage, spread } from './stats.js';

const BENCH_INSTANCE = { name: 'bench', port: 19460, controllerPort: 19461 };

/** One measured line of the table. */
interface Rate {
  readonly what: string;
  readonly records: number;
  readonly bytes: number;
  readonly seconds: number;
  /** CPU seconds spent meanwhile by the client (ours: this process) and by the local broker. */
  readonly cpu?: { readonly client: number | undefined; readonly broker: number | undefined };
}

/** What one round measured: ours beside Kafka's tool, twice, and the full replay. */
interface Round {
  readonly ingest: Rate;
  readonly producer: Rate;
  readonly read: Rate;
  readonly consumer: Rate;
  readonly replay: Rate;
  /** Load average (1 min) at the round's start and end. */
  readonly load: readonly [number, number];
}

type Compression = 'gzip' | 'none';

interface Options {
  readonly trajectories: number;
  readonly repeat: number;
  readonly compression: Compression;
  readonly keep: boolean;
}

/**
 * CPU seconds from /proc/<pid>/stat (Linux, clock ticks of 1/100 s): the process's own utime +
 * stime, or with `children` what its exited children used (how Kafka's tools are counted).
 * Undefined where /proc is missing. CPU time moves far less with the box's load than wall time.
 */
function procCpuSeconds(pid: number | 'self', children = false): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    const at = children ? 13 : 11; // utime, stime are fields 14, 15; cutime, cstime 16, 17
    return (Number(fields[at]) + Number(fields[at + 1])) / 100;
  } catch {
    return undefined;
  }
}

/**
 * Runs `measure` and adds the CPU seconds spent meanwhile by the client (this process for ours,
 * the Kafka tool otherwise) and by the local broker (none for KAFKA_BROKERS' cluster).
 */
async function withCpu<R extends Rate>(
  brokerPid: number | undefined,
  ours: boolean,
  measure: () => Promise<R>,
): Promise<R> {
  const clientCpu = (): number | undefined =>
    ours ? process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6 : procCpuSeconds('self', true);
  const brokerCpu = (): number | undefined =>
    brokerPid === undefined ? undefined : procCpuSeconds(brokerPid);
  const [client, broker] = [clientCpu(), brokerCpu()];
  const rate = await measure();
  const [clientAfter, brokerAfter] = [clientCpu(), brokerCpu()];
  const used = (before?: number, after?: number) =>
    before === undefined || after === undefined ? undefined : after - before;
  return { ...rate, cpu: { client: used(client, clientAfter), broker: used(broker, brokerAfter) } };
}

const perSecond = (n: number, seconds: number): number => n / Math.max(seconds, 1e-9);
const mb = (bytes: number): number => bytes / (1024 * 1024);
const recordsPerSecond = (r: Rate): number => perSecond(r.records, r.seconds);

function parseArgs(args: string[]): Options {
  const value = (flag: string): string | undefined => {
    const at = args.indexOf(flag);
    return at >= 0 ? args[at + 1] : undefined;
  };
  const trajectories = Number(value('--trajectories') ?? 1024);
  if (!Number.isInteger(trajectories) || trajectories < 8 || trajectories % 8 !== 0)
    throw new Error(
      `--trajectories ${value('--trajectories')} must be a multiple of 8 (groups of 8), at least 8`,
    );
  const repeat = Number(value('--repeat') ?? 1);
  if (!Number.isInteger(repeat) || repeat < 1) throw new Error(`--repeat ${value('--repeat')} must be ≥ 1`);
  const compression = value('--compression') ?? 'gzip';
  if (compression !== 'gzip' && compression !== 'none')
    throw new Error(`--compression ${compression}: kafkajs writes gzip or none`);
  return { trajectories, repeat, compression, keep: args.includes('--keep') };
}

async function ingest(
  kafka: KafkaConnection,
  topics: ReturnType<typeof spaTopicNames>,
  options: Options,
): Promise<Rate & { written: readonly Outbound[] }> {
  const config = episodeConfig({
    env: 'sokoban',
    groups: options.trajectories / 8,
    groupSize: 8,
    batches: 1,
    runId: 'bench',
    mode: 'wm',
  });
  // The gate `spa generate` uses: the episode loop blocks while Kafka is behind.
  const gate = new DemandGate(SINK_IN_FLIGHT_LIMIT);
  const outputs = generatorPipeline(
    config,
    envFactory({ name: 'sokoban', puzzles: 'generated' }),
    builtinPolicy('random', { mode: 'wm', seed: 1 }),
    { target: 'sft', gate },
  );
  const sink = await kafka.transport.sink({
    transactionalId: `bench-ingest-${topics.sft}`,
    compression: options.compression,
  });
  const written: Outbound[] = [];
  let transactions = 0;
  const started = performance.now();
  await publishOutbound(outputs, sink, {
    topics,
    gate,
    onCommitted: (chunk) => void (written.push(...chunk), (transactions += 1)),
    traceparent: outboundTraceparent,
  });
  const seconds = (performance.now() - started) / 1000;
  await sink.close();
  const what = `ingest: generator → Avro → Kafka (${transactions} tx)`;
  return { what, records: written.length, bytes: 0, seconds, written };
}

/**
 * The ingested records' key + value bytes, measured after the ingest's clock and CPU meters
 * stopped, so encoding them twice costs the measurement nothing.
 */
function withBytes(
  rate: Rate & { written: readonly Outbound[] },
  topics: ReturnType<typeof spaTopicNames>,
): Rate {
  const { written, ...measured } = rate;
  const bytes = written.reduce((sum, o) => {
    const record = toKafkaRecord(o, topics[o.topic]);
    return sum + (record.value?.length ?? 0) + (record.key?.length ?? 0);
  }, 0);
  return { ...measured, bytes };
}

async function producerPerformance(
  brokers: readonly string[],
  topic: string,
  records: number,
  size: number,
  compression: Compression,
): Promise<Rate> {
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
    ...['acks=all', 'enable.idempotence=true', `compression.type=${compression}`],
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
  let joinedAt: number | undefined;
  void read.joined.then(() => (joinedAt = performance.now()));
  let last = 0;
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
  // From joining the group to the last record, as ConsumerPerformance's fetch time leaves out
  // joining; the quiet period that ends a read of a transactional topic is not reading either.
  const seconds = (last - (joinedAt ?? last)) / 1000;
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
  const header = ['', 'records', 'MB', 'seconds', 'records/s', 'MB/s', 'CPU s: client', 'broker'];
  const cpu = (x: number | undefined): string => (x === undefined ? '' : x.toFixed(2));
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
          cpu(r.cpu?.client),
          cpu(r.cpu?.broker),
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

const ratio = (ours: Rate, theirs: Rate): number => recordsPerSecond(ours) / recordsPerSecond(theirs);

const ratioLine = (ours: Rate, theirs: Rate): string =>
  `  ratio ours/Kafka: ${ratio(ours, theirs).toFixed(2)}× records/s, ` +
  `${(perSecond(ours.bytes, ours.seconds) / perSecond(theirs.bytes, theirs.seconds)).toFixed(2)}× MB/s`;

/** Topic definitions of one round; with `--compression none` the topics keep batches as sent. */
function roundTopics(prefix: string, compression: Compression): TopicDefinition[] {
  const definitions = spaTopics({ prefix });
  const perf = { ...definitions.find((t) => t.role === 'trajectories')!, name: `${prefix}perf` };
  return [...definitions, perf].map((t) =>
    compression === 'gzip' || t.configs['compression.type'] !== 'gzip'
      ? t
      : { ...t, configs: { ...t.configs, 'compression.type': 'producer' } },
  );
}

/** One round on fresh topics `bench-<id>.*`: ingest, ProducerPerformance, read, ConsumerPerformance, replay. */
async function round(kafka: KafkaConnection, options: Options, brokerPid?: number): Promise<Round> {
  const { config } = kafka;
  const prefix = `bench-${Date.now().toString(36)}.`;
  const topics = spaTopicNames({ prefix });
  const loadAtStart = loadavg()[0]!;
  await applyTopicsTo(config.brokers, roundTopics(prefix, options.compression), config);
  try {
    console.error(
      `[bench kafka] ${options.trajectories} trajectories, ${options.compression}, on ${config.brokers.join(',')} (topics ${prefix}*); ${loadAverage()}`,
    );
    const ingested = withBytes(await withCpu(brokerPid, true, () => ingest(kafka, topics, options)), topics);
    const producer = await withCpu(brokerPid, false, () =>
      producerPerformance(
        config.brokers,
        `${prefix}perf`,
        ingested.records,
        Math.round(ingested.bytes / ingested.records),
        options.compression,
      ),
    );
    const read = await withCpu(brokerPid, true, () => replayRead(kafka, topics.trajectories));
    const consumer = await withCpu(brokerPid, false, () =>
      consumerPerformance(config.brokers, topics.trajectories, read.records),
    );
    const replayStarted = performance.now();
    const replay = await replayTrajectories(kafka, {
      fromTopic: topics.trajectories,
      toTopic: `${prefix}replay`,
      dlqTopic: topics.dlq,
      start: { kind: 'earliest' },
      annotation: 'gt',
      log: () => {},
    });
    const replayed: Rate = {
      what: 'full replay → SftRows (tx), incl. setup',
      records: replay.read,
      bytes: read.bytes,
      seconds: (performance.now() - replayStarted) / 1000,
    };
    return {
      ingest: ingested,
      producer,
      read,
      consumer,
      replay: replayed,
      load: [loadAtStart, loadavg()[0]!],
    };
  } finally {
    if (!options.keep) await deleteTopics(config, prefix);
  }
}

function printRound(r: Round, index: number, of: number): void {
  console.log(
    `round ${index + 1}/${of}: load average (1 min) ${r.load[0].toFixed(2)} at start, ${r.load[1].toFixed(2)} at end`,
  );
  printTable([
    r.ingest,
    r.producer,
    ratioLine(r.ingest, r.producer),
    r.read,
    r.consumer,
    ratioLine(r.read, r.consumer),
    r.replay,
  ]);
}

function printSummary(rounds: readonly Round[]): void {
  type Figure = 'ingest' | 'producer' | 'read' | 'consumer' | 'replay';
  const rate = (f: Figure) =>
    spread(
      rounds.map((r) => recordsPerSecond(r[f])),
      0,
    );
  const times = (ours: Figure, theirs: Figure) =>
    `${spread(
      rounds.map((r) => ratio(r[ours], r[theirs])),
      2,
    )}×`;
  const rows: [string, string][] = [
    ['ingest records/s', rate('ingest')],
    ['ProducerPerformance records/s', rate('producer')],
    ['ingest ÷ ProducerPerformance', times('ingest', 'producer')],
    ['replay read records/s', rate('read')],
    ['ConsumerPerformance records/s', rate('consumer')],
    ['read ÷ ConsumerPerformance', times('read', 'consumer')],
    ['full replay records/s', rate('replay')],
  ];
  const load = spread(
    rounds.flatMap((r) => r.load),
    2,
  );
  console.log(
    [
      `summary of ${rounds.length} rounds: median (min–max); load average (1 min) ${load}`,
      ...rows.map(([label, value]) => `  ${label.padEnd(32)}${value}`),
    ].join('\n'),
  );
}

/**
 * Runs `work` on KAFKA_BROKERS' cluster, or on the local "bench" instance (started here when it
 * is not running, and then stopped again); closes the transport afterwards. `brokerPid`: the local broker's, for CPU.
 */
export async function withBenchKafka<T>(
  clientId: string,
  work: (kafka: KafkaConnection, brokerPid: number | undefined) => Promise<T>,
): Promise<T> {
  const external = Boolean(process.env.KAFKA_BROKERS?.trim());
  const wasRunning = !external && (await brokerStatus(BENCH_INSTANCE)).answering;
  const broker = await ensureBroker(BENCH_INSTANCE);
  const config = kafkaConfigFromEnv(process.env, { brokers: [...broker.brokers], clientId });
  const kafka: KafkaConnection = { transport: kafkaTransport(config), config };
  try {
    return await work(kafka, broker.pid);
  } finally {
    await kafka.transport.close();
    if (!external && !wasRunning) await stopBroker(BENCH_INSTANCE);
  }
}

/** Runs the suite; see the module comment. */
export async function run(args: string[]): Promise<void> {
  const options = parseArgs(args);
  await withBenchKafka('spa-bench', async (kafka, brokerPid) => {
    const rounds: Round[] = [];
    for (let i = 0; i < options.repeat; i++) {
      rounds.push(await round(kafka, options, brokerPid));
      printRound(rounds[i]!, i, options.repeat);
    }
    if (rounds.length > 1) printSummary(rounds);
  });
}

export async function deleteTopics(config: KafkaConnectionConfig, prefix: string): Promise<void> {
  const admin = await openKafkajsAdmin(config);
  try {
    const mine = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
    if (mine.length > 0) await admin.deleteTopics(mine);
  } finally {
    await admin.close();
  }
}
