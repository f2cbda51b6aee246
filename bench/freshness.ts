/**
 * `npm run bench -- freshness [--turn-ms n] [--batches n] [--repeat n] [--idle-ms n]`: how fresh the data is
 * when the trainer gets it. The generator (random policy, each policy call held to `--turn-ms`
 * as a model would take; 8 groups × 8 episodes a batch) writes rollouts through the real Kafka
 * path (generatorPipeline → publishOutbound: transactional, idempotent, a transaction closes
 * after 100 ms or 1,024 records); the PPO service's own reader (bench/python/freshness.py:
 * KafkaLog read_committed → RolloutSource decode) notes, per record, the time from its
 * trajectory being assembled (`created_at`, right after the episode's last env step) to being
 * in hand, decoded. Prints p50/p90/p99 per round and, with `--repeat`, their median and range.
 *
 * The default load: 50 ms per policy call, the pace of a small model on this machine, about 160
 * trajectories/s (printed). Broker: KAFKA_BROKERS' cluster, or the local "bench" instance
 * (bench/kafka.ts). Topics are per round (`bench-fresh-<id>.*`) and deleted afterwards.
 */
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { envFactory } from '../envs/registry.js';
import { applyTopicsTo } from '../infra/kafka/topics.js';
import type { Outbound } from '../schemas/outbound.js';
import { spaTopicNames, spaTopics } from '../schemas/topics.js';
import { DemandGate, SINK_IN_FLIGHT_LIMIT } from '../streams/demand-gate.js';
import { episodeConfig } from '../streams/episodes/episode-config.js';
import { generatorPipeline } from '../streams/generator-pipeline.js';
import type { KafkaConnection } from '../streams/kafka/consume-spa.js';
import { publishOutbound } from '../streams/kafka/publish-outbound.js';
import { builtinPolicy } from '../policies/builtin.js';
import type { Policy } from '../policies/policy.js';
import { deleteTopics, withBenchKafka } from './kafka.js';
import { spawnPython } from './python/venv.js';
import { loadAverage, median, quantile } from './stats.js';

interface Options {
  readonly turnMs: number;
  /** publishOutbound's transactionIdleMs; undefined: its default. */
  readonly idleMs: number | undefined;
  readonly batches: number;
  readonly repeat: number;
}

/** What the trainer side printed for one round. */
interface Latencies {
  readonly records: number;
  readonly rejected: number;
  readonly p50_ms: number;
  readonly p90_ms: number;
  readonly p99_ms: number;
  readonly max_ms: number;
  readonly min_ms: number;
}

/** A round: the trainer side's latencies, the generator's rate, and the producer side's share. */
interface Round extends Latencies {
  readonly perSecond: number;
  /** From created_at to its transaction committed (the producer's share of the latency), ms. */
  readonly committedP50: number;
  readonly committedP99: number;
}

const GROUPS = 8;
const GROUP_SIZE = 8;

function parseArgs(args: string[]): Options {
  const options = { turnMs: 50, batches: 40, repeat: 1, idleMs: undefined as number | undefined };
  for (let i = 0; i < args.length; i += 2) {
    const [flag, value] = [args[i], Number(args[i + 1])];
    const key = {
      '--turn-ms': 'turnMs',
      '--batches': 'batches',
      '--repeat': 'repeat',
      '--idle-ms': 'idleMs',
    }[flag ?? ''] as keyof typeof options | undefined;
    if (key === undefined || !(Number.isFinite(value) && value >= (key === 'turnMs' ? 0 : 1)))
      throw new Error(
        `freshness: bad argument ${flag} ${args[i + 1]} (usage: [--turn-ms n ≥ 0] [--batches n ≥ 1] [--repeat n ≥ 1] [--idle-ms n ≥ 1])`,
      );
    options[key] = value;
  }
  return options;
}

/** `policy` with each call taking at least `ms` (as a model's generation would), the pace of the load. */
function paced(policy: Policy, ms: number): Policy {
  return {
    name: policy.name,
    version: policy.version,
    act: async (requests) => {
      const [texts] = await Promise.all([policy.act(requests), sleep(ms)]);
      return texts;
    },
  };
}

/** One round: the trainer-side reader positioned at the end of a fresh topic, then the generator. */
async function round(kafka: KafkaConnection, options: Options): Promise<Round> {
  const { config } = kafka;
  const prefix = `bench-fresh-${Date.now().toString(36)}.`;
  const topics = spaTopicNames({ prefix });
  await applyTopicsTo(config.brokers, spaTopics({ prefix }), config);
  const expected = options.batches * GROUPS * GROUP_SIZE;
  const reader = await spawnPython('freshness.py', [
    topics.rollouts,
    config.brokers.join(','),
    String(expected),
  ]);
  let stderr = '';
  reader.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const lines = createInterface({ input: reader.stdout })[Symbol.asyncIterator]();
  const exited = new Promise<number | null>((resolve) => reader.on('close', resolve));
  const nextLine = async (what: string) => {
    const line = await Promise.race([lines.next(), exited.then(() => undefined)]);
    if (line === undefined || line.done)
      throw new Error(`freshness.py ended before ${what}:\n${stderr.slice(-2000)}`);
    return line.value;
  };
  try {
    await nextLine('it was ready');
    const gate = new DemandGate(SINK_IN_FLIGHT_LIMIT);
    const outputs = generatorPipeline(
      episodeConfig({
        env: 'sokoban',
        groups: GROUPS,
        groupSize: GROUP_SIZE,
        batches: options.batches,
        runId: 'fresh',
        mode: 'base',
      }),
      envFactory({ name: 'sokoban', puzzles: 'generated' }),
      paced(builtinPolicy('random', { mode: 'base', seed: 1 }), options.turnMs),
      { target: 'rollouts', gate },
    );
    const sink = await kafka.transport.sink({ transactionalId: `bench-fresh-${topics.rollouts}` });
    const started = performance.now();
    const committed: number[] = []; // ms from created_at to the end of its transaction's commit
    const onCommitted = (chunk: readonly Outbound[]) => {
      const now = Date.now();
      for (const o of chunk) if (o.topic === 'rollouts') committed.push(now - o.record.created_at);
    };
    try {
      await publishOutbound(outputs, sink, {
        topics,
        gate,
        onCommitted,
        ...(options.idleMs === undefined ? {} : { transactionIdleMs: options.idleMs }),
      });
    } finally {
      await sink.close();
    }
    const perSecond = expected / ((performance.now() - started) / 1000);
    return {
      ...(JSON.parse(await nextLine('its result')) as Latencies),
      perSecond,
      committedP50: quantile(committed, 0.5),
      committedP99: quantile(committed, 0.99),
    };
  } finally {
    reader.kill();
    await deleteTopics(config, prefix);
  }
}

/** Runs the suite; see the module comment. */
export async function run(args: string[]): Promise<void> {
  const options = parseArgs(args);
  await withBenchKafka('spa-bench', async (kafka) => {
    const rounds: Round[] = [];
    for (let i = 0; i < options.repeat; i++) {
      const r = await round(kafka, options);
      rounds.push(r);
      console.log(
        JSON.stringify({
          round: i + 1,
          turnMs: options.turnMs,
          idleMs: options.idleMs ?? 'default',
          trajectoriesPerSecond: Math.round(r.perSecond),
          records: r.records,
          rejected: r.rejected,
          p50Ms: r.p50_ms,
          p90Ms: r.p90_ms,
          p99Ms: r.p99_ms,
          maxMs: r.max_ms,
          committedP50Ms: Math.round(r.committedP50),
          committedP99Ms: Math.round(r.committedP99),
          load: loadAverage(),
        }),
      );
    }
    if (rounds.length > 1) {
      const summary = (pick: (r: Latencies) => number) => {
        const values = rounds.map(pick);
        return { median: median(values), min: Math.min(...values), max: Math.max(...values) };
      };
      console.log(
        JSON.stringify({
          rounds: rounds.length,
          p50Ms: summary((r) => r.p50_ms),
          p99Ms: summary((r) => r.p99_ms),
          goalP99Ms: 100,
        }),
      );
    }
  });
}
