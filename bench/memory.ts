/**
 * `npm run bench -- memory [--steps n] [--quota bytes/s]`: the generator's memory while Kafka is
 * the bottleneck. The whole generator (random policy, world-model prompts → annotate → filter →
 * Avro → transactional writes, with the DemandGate `spa generate` uses) runs for `--steps` env
 * steps (default 1,000,000) against a broker that throttles this producer to `--quota` bytes/s
 * (a Kafka client quota, `producer_byte_rate`, default 512 KiB/s: far slower than the generator),
 * so every record waits on the broker. The process's RSS is sampled every second; a progress
 * line every 10 s, then one JSON line: RSS at the start, its median and maximum, the maximum of
 * the second and the last quarter of the run (the first is warm-up; flat: the last is not above
 * the second by more than 10%), and the goal (≤ 300 MB).
 *
 * Broker: KAFKA_BROKERS' cluster, or the local "bench" instance (bench/kafka.ts); the quota is set
 * on this run's client id with Kafka's own kafka-configs and removed afterwards. Topics are per
 * run (`bench-mem-<id>.*`) and deleted afterwards. The run stops at the first trajectory past
 * `--steps`, so its last transaction may hold a trajectory without all of its SFT rows.
 */
import { takeWhile, tap } from 'rxjs';
import { envFactory } from '../envs/registry.js';
import type { KafkaConnectionConfig } from '../infra/kafka/client/config.js';
import { runKafkaTool } from '../infra/kafka/tools.js';
import { applyTopicsTo } from '../infra/kafka/topics.js';
import { spaTopicNames, spaTopics } from '../schemas/topics.js';
import { DemandGate, SINK_IN_FLIGHT_LIMIT } from '../streams/demand-gate.js';
import { episodeConfig } from '../streams/episodes/episode-config.js';
import { generatorPipeline } from '../streams/generator-pipeline.js';
import { publishOutbound } from '../streams/kafka/publish-outbound.js';
import { builtinPolicy } from '../policies/builtin.js';
import type { KafkaConnection } from '../streams/kafka/consume-spa.js';
import { deleteTopics, withBenchKafka } from './kafka.js';
import { loadAverage, median } from './stats.js';

interface Options {
  readonly steps: number;
  readonly quota: number;
}

const CLIENT_ID = 'spa-bench-memory';
const GOAL_MB = 300;
const MB = 1024 * 1024;

function parseArgs(args: string[]): Options {
  const options = { steps: 1_000_000, quota: MB / 2 };
  for (let i = 0; i < args.length; i += 2) {
    const [flag, value] = [args[i], Number(args[i + 1])];
    const key = ({ '--steps': 'steps', '--quota': 'quota' } as const)[flag as '--steps' | '--quota'];
    if (key === undefined || !(Number.isInteger(value) && value >= 1))
      throw new Error(
        `memory: bad argument ${flag} ${args[i + 1]} (usage: [--steps n ≥ 1] [--quota bytes/s ≥ 1])`,
      );
    options[key] = value;
  }
  return options;
}

/** Sets (or with `bytesPerSecond` undefined removes) the producer quota of this run's client id. */
async function producerQuota(config: KafkaConnectionConfig, bytesPerSecond?: number): Promise<void> {
  const change =
    bytesPerSecond === undefined
      ? ['--delete-config', 'producer_byte_rate']
      : ['--add-config', `producer_byte_rate=${bytesPerSecond}`];
  const result = await runKafkaTool('configs', [
    ...['--bootstrap-server', config.brokers.join(','), '--alter', ...change],
    ...['--entity-type', 'clients', '--entity-name', config.clientId],
  ]);
  if (result.exitCode !== 0)
    throw new Error(
      `kafka-configs could not change the quota of ${CLIENT_ID}: ${result.stderr.slice(-1000)}`,
    );
}

/** Runs the suite; see the module comment. */
export async function run(args: string[]): Promise<void> {
  const options = parseArgs(args);
  await withBenchKafka(CLIENT_ID, (kafka) => measure(kafka, options));
}

/** One run on `kafka`; see the module comment. */
async function measure({ config, transport }: KafkaConnection, options: Options): Promise<void> {
  const prefix = `bench-mem-${Date.now().toString(36)}.`;
  const topics = spaTopicNames({ prefix });
  const rss: number[] = [];
  const sample = () => rss.push(process.memoryUsage().rss / MB);
  let steps = 0;
  let records = 0;
  const started = performance.now();
  const report = () =>
    console.error(
      `[bench memory] ${steps.toLocaleString('en')} of ${options.steps.toLocaleString('en')} steps, ` +
        `${records.toLocaleString('en')} records committed, ${Math.round(records / ((performance.now() - started) / 1000))} records/s, ` +
        `RSS ${rss.at(-1)?.toFixed(0)} MB; ${loadAverage()}`,
    );
  sample();
  const sampler = setInterval(sample, 1000);
  const progress = setInterval(report, 10_000);
  try {
    await applyTopicsTo(config.brokers, spaTopics({ prefix }), config);
    await producerQuota(config, options.quota);
    console.error(
      `[bench memory] ${options.steps.toLocaleString('en')} env steps, producer quota ${options.quota} bytes/s, ` +
        `on ${config.brokers.join(',')} (topics ${prefix}*); ${loadAverage()}`,
    );
    const gate = new DemandGate(SINK_IN_FLIGHT_LIMIT);
    const groups = 8;
    const groupSize = 8;
    const outputs = generatorPipeline(
      episodeConfig({
        env: 'sokoban',
        groups,
        groupSize,
        // More than enough batches: the stream stops at the step count (at least one step an episode).
        batches: Math.ceil(options.steps / (groups * groupSize)),
        runId: 'mem',
        mode: 'wm',
      }),
      envFactory({ name: 'sokoban', puzzles: 'generated' }),
      builtinPolicy('random', { mode: 'wm', seed: 1 }),
      { target: 'sft', gate },
    ).pipe(
      takeWhile(() => steps < options.steps),
      tap((o) => {
        if (o.topic === 'trajectories') steps += o.record.num_actions;
      }),
    );
    const sink = await transport.sink({ transactionalId: `bench-mem-${prefix}` });
    try {
      await publishOutbound(outputs, sink, {
        topics,
        gate,
        onCommitted: (chunk) => (records += chunk.length),
      });
    } finally {
      await sink.close();
    }
  } finally {
    clearInterval(sampler);
    clearInterval(progress);
    await producerQuota(config).catch((error: unknown) => console.error(String(error)));
    await deleteTopics(config, prefix).catch((error: unknown) => console.error(String(error)));
  }
  sample();
  report();
  const quarter = Math.max(1, Math.floor(rss.length / 4));
  const round = (x: number) => Math.round(x);
  // The first quarter is warm-up (JIT, heap growth); flat means the last quarter is not above the second.
  const secondQuarterMax = Math.max(...rss.slice(quarter, 2 * quarter));
  const lastQuarterMax = Math.max(...rss.slice(-quarter));
  console.log(
    JSON.stringify({
      steps,
      records,
      seconds: round((performance.now() - started) / 1000),
      quotaBytesPerSecond: options.quota,
      rssMb: { start: round(rss[0]!), median: round(median(rss)), max: round(Math.max(...rss)) },
      secondQuarterMaxMb: round(secondQuarterMax),
      lastQuarterMaxMb: round(lastQuarterMax),
      flat: lastQuarterMax <= secondQuarterMax * 1.1,
      goalMb: GOAL_MB,
      withinGoal: Math.max(...rss) <= GOAL_MB,
      load: loadAverage(),
    }),
  );
}
