/**
 * `npm run bench -- kafka [--trajectories n] [--repeat n] [--compression gzip|none] [--keep]`:
 * the pipeline's Kafka throughput beside Kafka's own Java client on the same records, the same
 * broker and the same run (defaults: 8,192 trajectories, 2 rounds, gzip).
 *
 * - ingest: random policy → annotate → filter → Avro → transactional Kafka writes (the whole
 *   generator, generatorPipeline + publishOutbound, with the DemandGate `spa generate` uses);
 * - our client, same records: the records the ingest committed, sent again through our sink in
 *   the same transactions (the client alone, without the generator);
 * - Java KafkaProducer: the same records in the same transactions, acks=all, idempotent, the same
 *   codec (bench/kafka-anchor.ts says which settings and why), warm: the median of its rounds
 *   after two warm-up rounds in one JVM;
 * - replay read: spa.trajectories read_committed through readTopic and Avro-decoded, vs Java's
 *   KafkaConsumer on the same topic with the same fetch settings (warm, as the producer);
 * - a full `replay` (read → annotate → filter → SftRows → transactional writes) for scale.
 *
 * Each client's run starts with an untimed warm-up round (1,024 trajectories, ours only), so our
 * figures are warm as Java's are. `--repeat n` runs the timed round n times on fresh topics and
 * ends with the median and range of every figure and ratio, and whether the goals are met
 * (ingest ≥ 1.0×, read ≥ 0.7× of Java's). Every round prints the load average, since a shared
 * box's load moves the absolute figures (the ratios of one round share it); beside each figure the
 * CPU seconds its client (this process, or the JVM in its timed rounds) and the local broker
 * spent, which move far less with load. `--compression none` makes both producers send
 * uncompressed batches to topics that keep them as sent. Levers measured before:
 * docs/experiments/2026-11-25-kafka-throughput-levers.md.
 *
 * Broker: KAFKA_BROKERS' cluster, or a local instance, "bench" on 19460 unless KAFKA_INSTANCE /
 * KAFKA_PORT name another as for `npm run kafka:start` (reused when running, stopped again when
 * started here). Topics are per round (`bench-<id>.*`) and deleted afterwards.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { lastValueFrom, map, toArray } from 'rxjs';
import { envFactory } from '../envs/registry.js';
import { procStat } from '../infra/process/proc-stat.js';
import { brokerStatus, ensureBroker, stopBroker } from '../infra/kafka/broker.js';
import { kafkaConfigFromEnv, type KafkaConnectionConfig } from '../infra/kafka/client/config.js';
import { openKafkajsAdmin } from '../infra/kafka/client/kafkajs-admin.js';
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
import type { OutgoingRecord } from '../infra/kafka/client/transport.js';
import { builtinPolicy } from '../policies/builtin.js';
import { outboundTraceparent } from '../streams/telemetry/episode-key.js';
import { javaConsumer, javaProducer, writeTransactions, type Rate } from './kafka-anchor.js';
import { loadAverage, spread } from './stats.js';

/** The suites' local broker: "bench" on 19460, or the one KAFKA_INSTANCE / KAFKA_PORT name. */
function benchInstance(env: NodeJS.ProcessEnv = process.env) {
  const port = env.KAFKA_PORT?.trim() ? Number(env.KAFKA_PORT) : 19460;
  return { name: env.KAFKA_INSTANCE?.trim() || 'bench', port, controllerPort: port + 1 };
}

/** Trajectories of the untimed warm-up round that starts each client's run. */
const WARMUP_TRAJECTORIES = 1024;

/** The goals of issue 35: ours ÷ Kafka's Java client on the same records, records/s. */
const GOALS = { ingest: 1.0, read: 0.7 } as const;

/** What one round measured: ours beside Kafka's Java client, and the full replay. */
interface Round {
  readonly ingest: Rate;
  readonly sameRecords: Rate;
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

/** A round's topics: the pipeline's (`<prefix>spa.*`), and copies for our client's and Java's resend. */
interface RoundTopics {
  readonly prefix: string;
  readonly names: ReturnType<typeof spaTopicNames>;
  readonly ours: string;
  readonly java: string;
}

/** Runs `measure` in this process and adds the CPU seconds this process and the local broker spent meanwhile. */
async function withCpu<R extends Rate>(brokerPid: number | undefined, measure: () => Promise<R>): Promise<R> {
  const clientCpu = (): number => (process.cpuUsage().user + process.cpuUsage().system) / 1e6;
  const brokerCpu = (): number | undefined =>
    brokerPid === undefined ? undefined : procStat(brokerPid)?.cpuSeconds;
  const [client, broker] = [clientCpu(), brokerCpu()];
  const rate = await measure();
  const brokerAfter = brokerCpu();
  return {
    ...rate,
    cpu: {
      client: clientCpu() - client,
      broker: broker === undefined || brokerAfter === undefined ? undefined : brokerAfter - broker,
    },
  };
}

const perSecond = (n: number, seconds: number): number => n / Math.max(seconds, 1e-9);
const mb = (bytes: number): number => bytes / (1024 * 1024);
const recordsPerSecond = (r: Rate): number => perSecond(r.records, r.seconds);

function parseArgs(args: string[]): Options {
  const value = (flag: string): string | undefined => {
    const at = args.indexOf(flag);
    return at >= 0 ? args[at + 1] : undefined;
  };
  const trajectories = Number(value('--trajectories') ?? 8192);
  if (!Number.isInteger(trajectories) || trajectories < 8 || trajectories % 8 !== 0)
    throw new Error(
      `--trajectories ${value('--trajectories')} must be a multiple of 8 (groups of 8), at least 8`,
    );
  const repeat = Number(value('--repeat') ?? 2);
  if (!Number.isInteger(repeat) || repeat < 1) throw new Error(`--repeat ${value('--repeat')} must be ≥ 1`);
  const compression = value('--compression') ?? 'gzip';
  if (compression !== 'gzip' && compression !== 'none')
    throw new Error(`--compression ${compression}: kafkajs writes gzip or none`);
  return { trajectories, repeat, compression, keep: args.includes('--keep') };
}

/** The whole generator into the round's topics; returns the committed transactions' records too. */
async function ingest(
  kafka: KafkaConnection,
  topics: RoundTopics,
  trajectories: number,
  compression: Compression,
): Promise<Rate & { transactions: readonly (readonly Outbound[])[] }> {
  const config = episodeConfig({
    env: 'sokoban',
    groups: trajectories / 8,
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
  const sink = await kafka.transport.sink({ transactionalId: `bench-ingest-${topics.prefix}`, compression });
  const transactions: (readonly Outbound[])[] = [];
  const started = performance.now();
  await publishOutbound(outputs, sink, {
    topics: topics.names,
    gate,
    onCommitted: (chunk) => void transactions.push(chunk),
    traceparent: outboundTraceparent,
  });
  const seconds = (performance.now() - started) / 1000;
  await sink.close();
  const records = transactions.reduce((n, t) => n + t.length, 0);
  const what = `ingest: generator → Avro → Kafka (${transactions.length} tx)`;
  return { what, records, bytes: 0, seconds, transactions };
}

/**
 * The records the ingest committed, encoded again as publishOutbound encoded them (the same
 * bytes: Avro and the headers are deterministic), after its clock and CPU meters stopped.
 */
function committedRecords(
  transactions: readonly (readonly Outbound[])[],
  topics: RoundTopics,
): OutgoingRecord[][] {
  return transactions.map((chunk) =>
    chunk.map((o) => toKafkaRecord(o, topics.names[o.topic], outboundTraceparent(o))),
  );
}

const recordBytes = (r: OutgoingRecord): number => (r.key?.length ?? 0) + (r.value?.length ?? 0);

/** Our sink sending `transactions` again, one transaction at a time, to the `ours` copies of the topics. */
async function ourClientSameRecords(
  kafka: KafkaConnection,
  transactions: readonly (readonly OutgoingRecord[])[],
  topics: RoundTopics,
  compression: Compression,
): Promise<Rate> {
  const retargeted = transactions.map((t) =>
    t.map((r) => ({ ...r, topic: topics.ours + r.topic.slice(topics.prefix.length) })),
  );
  const sink = await kafka.transport.sink({ transactionalId: `bench-ours-${topics.prefix}`, compression });
  const started = performance.now();
  for (const records of retargeted) await sink.transaction((tx) => tx.send(records));
  const seconds = (performance.now() - started) / 1000;
  await sink.close();
  const all = retargeted.flat();
  return {
    what: 'our client, same records and tx',
    records: all.length,
    bytes: all.reduce((n, r) => n + recordBytes(r), 0),
    seconds,
  };
}

async function replayRead(kafka: KafkaConnection, topic: string): Promise<Rate> {
  const read = await readTopic(kafka, {
    topic,
    start: { kind: 'earliest' },
    maxInFlight: 1024,
  });
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
  // From joining the group to the last record (the Java consumer's clock starts at its first poll).
  const seconds = (last - (joinedAt ?? last)) / 1000;
  return {
    what: 'replay read: readTopic + Avro decode',
    records: sizes.length,
    bytes: sizes.reduce((a, b) => a + b, 0),
    seconds,
  };
}

async function fullReplay(kafka: KafkaConnection, topics: RoundTopics, read: Rate): Promise<Rate> {
  const started = performance.now();
  const replay = await replayTrajectories(kafka, {
    fromTopic: topics.names.trajectories,
    toTopic: `${topics.prefix}replay`,
    dlqTopic: topics.names.dlq,
    start: { kind: 'earliest' },
    annotation: 'gt',
    log: () => {},
  });
  // Says so should replay's read ever end short of the read above.
  const short = replay.read < read.records ? ` (ended early: ${replay.read} of ${read.records})` : '';
  return {
    what: `full replay → SftRows (tx), incl. setup${short}`,
    records: replay.read,
    bytes: read.bytes,
    seconds: (performance.now() - started) / 1000,
  };
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

const ratioLine = (label: string, ours: Rate, theirs: Rate): string =>
  `  ${label}: ${ratio(ours, theirs).toFixed(2)}× records/s`;

/** Topic definitions under `prefix`; with `--compression none` the topics keep batches as sent. */
function topicsUnder(prefix: string, compression: Compression): TopicDefinition[] {
  return spaTopics({ prefix }).map((t) =>
    compression === 'gzip' || t.configs['compression.type'] !== 'gzip'
      ? t
      : { ...t, configs: { ...t.configs, 'compression.type': 'producer' } },
  );
}

/** Fresh topics `bench-<id>.*` for one round: the pipeline's, and the two copies for the resends. */
async function createRoundTopics(
  config: KafkaConnectionConfig,
  compression: Compression,
): Promise<RoundTopics> {
  const prefix = `bench-${Date.now().toString(36)}.`;
  const topics = { prefix, names: spaTopicNames({ prefix }), ours: `${prefix}ours.`, java: `${prefix}java.` };
  await applyTopicsTo(
    config.brokers,
    [prefix, topics.ours, topics.java].flatMap((p) => topicsUnder(p, compression)),
    config,
  );
  return topics;
}

/** Ours only, untimed, small: JIT, connections and the broker's first transactions out of the way. */
async function warmUp(kafka: KafkaConnection, options: Options): Promise<void> {
  const topics = await createRoundTopics(kafka.config, options.compression);
  try {
    const ingested = await ingest(kafka, topics, WARMUP_TRAJECTORIES, options.compression);
    const records = committedRecords(ingested.transactions, topics);
    await ourClientSameRecords(kafka, records, topics, options.compression);
    await replayRead(kafka, topics.names.trajectories);
  } finally {
    await deleteTopics(kafka.config, topics.prefix);
  }
}

/** One timed round on fresh topics: ingest, our client and Java's on its records, both reads, replay. */
async function round(kafka: KafkaConnection, options: Options, brokerPid?: number): Promise<Round> {
  const { config } = kafka;
  const loadAtStart = loadavg()[0]!;
  const topics = await createRoundTopics(config, options.compression);
  const dir = mkdtempSync(join(tmpdir(), 'spa-bench-'));
  try {
    console.error(
      `[bench kafka] ${options.trajectories} trajectories, ${options.compression}, on ${config.brokers.join(',')} (topics ${topics.prefix}*); ${loadAverage()}`,
    );
    const { transactions, ...ingestRate } = await withCpu(brokerPid, () =>
      ingest(kafka, topics, options.trajectories, options.compression),
    );
    const records = committedRecords(transactions, topics);
    const ingested = { ...ingestRate, bytes: records.flat().reduce((n, r) => n + recordBytes(r), 0) };
    const sameRecords = await withCpu(brokerPid, () =>
      ourClientSameRecords(kafka, records, topics, options.compression),
    );
    const file = join(dir, 'records.bin');
    writeTransactions(file, records, topics.prefix);
    const producer = await javaProducer(config.brokers, {
      file,
      topicPrefix: topics.java,
      compression: options.compression,
      ...(brokerPid === undefined ? {} : { brokerPid }),
    });
    const read = await withCpu(brokerPid, () => replayRead(kafka, topics.names.trajectories));
    const written = transactions.flat().filter((o) => o.topic === 'trajectories').length;
    if (read.records !== written)
      throw new Error(`replay read got ${read.records} of the ${written} trajectories the ingest committed`);
    const consumer = await javaConsumer(config.brokers, {
      topic: topics.names.trajectories,
      records: read.records,
      ...(brokerPid === undefined ? {} : { brokerPid }),
    });
    const replay = await fullReplay(kafka, topics, read);
    return {
      ingest: ingested,
      sameRecords,
      producer,
      read,
      consumer,
      replay,
      load: [loadAtStart, loadavg()[0]!],
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    if (!options.keep) await deleteTopics(config, topics.prefix);
  }
}

function printRound(r: Round, index: number, of: number): void {
  console.log(
    `round ${index + 1}/${of}: load average (1 min) ${r.load[0].toFixed(2)} at start, ${r.load[1].toFixed(2)} at end`,
  );
  printTable([
    r.ingest,
    r.sameRecords,
    r.producer,
    ratioLine('ingest ÷ Java', r.ingest, r.producer),
    ratioLine('our client ÷ Java', r.sameRecords, r.producer),
    r.read,
    r.consumer,
    ratioLine('read ÷ Java', r.read, r.consumer),
    r.replay,
  ]);
}

function printSummary(rounds: readonly Round[]): void {
  type Figure = Exclude<keyof Round, 'load'>;
  const rate = (f: Figure) =>
    spread(
      rounds.map((r) => recordsPerSecond(r[f])),
      0,
    );
  const ratios = (ours: Figure, theirs: Figure) => rounds.map((r) => ratio(r[ours], r[theirs]));
  const times = (values: number[]) => `${spread(values, 2)}×`;
  const goal = (values: number[], at: number) => {
    const min = Math.min(...values);
    return `${times(values)}  goal ≥ ${at.toFixed(1)}×: ${min >= at ? 'met' : Math.max(...values) >= at ? 'met in some rounds' : 'missed'}`;
  };
  const rows: [string, string][] = [
    ['ingest records/s', rate('ingest')],
    ['our client, same records, records/s', rate('sameRecords')],
    ['Java KafkaProducer records/s', rate('producer')],
    ['ingest ÷ Java', goal(ratios('ingest', 'producer'), GOALS.ingest)],
    ['our client ÷ Java', times(ratios('sameRecords', 'producer'))],
    ['replay read records/s', rate('read')],
    ['Java KafkaConsumer records/s', rate('consumer')],
    ['read ÷ Java', goal(ratios('read', 'consumer'), GOALS.read)],
    ['full replay records/s', rate('replay')],
  ];
  const load = spread(
    rounds.flatMap((r) => r.load),
    2,
  );
  console.log(
    [
      `summary of ${rounds.length} rounds: median (min–max); load average (1 min) ${load}`,
      ...rows.map(([label, value]) => `  ${label.padEnd(38)}${value}`),
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
  const instance = benchInstance();
  const wasRunning = !external && (await brokerStatus(instance)).answering;
  const broker = await ensureBroker(instance);
  const config = kafkaConfigFromEnv(process.env, { brokers: [...broker.brokers], clientId });
  const kafka: KafkaConnection = { transport: kafkaTransport(config), config };
  try {
    return await work(kafka, broker.pid);
  } finally {
    await kafka.transport.close();
    if (!external && !wasRunning) await stopBroker(instance);
  }
}

/** Runs the suite; see the module comment. */
export async function run(args: string[]): Promise<void> {
  const options = parseArgs(args);
  const started = performance.now();
  await withBenchKafka('spa-bench', async (kafka, brokerPid) => {
    console.error(`[bench kafka] warm-up round (${WARMUP_TRAJECTORIES} trajectories, ours only, not timed)`);
    await warmUp(kafka, options);
    const rounds: Round[] = [];
    for (let i = 0; i < options.repeat; i++) {
      rounds.push(await round(kafka, options, brokerPid));
      printRound(rounds[i]!, i, options.repeat);
    }
    if (rounds.length > 1) printSummary(rounds);
  });
  console.log(`kafka bench: ${((performance.now() - started) / 60_000).toFixed(1)} min in all`);
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
