/**
 * What telemetry costs the generator (the target: at most 5% slower): the real generator pipeline
 * (streams/generator-pipeline.ts, random policy, no Kafka) with telemetry off vs on, where
 * "on" means episode spans with turn events for the sampled episodes, sampled stage timing,
 * spa_* counters on every record, spans exported over OTLP/HTTP to a local receiver and
 * metrics served for Prometheus; "bare" is the same pipeline without the telemetry hooks.
 *
 *   npm run bench -- telemetry [env] [episodes] [sampleRatio…]     (SPA_BENCH_ROUNDS, default 15)
 *
 * The per-second trace cap applies as configured (SPA_TRACE_MAX_PER_SECOND, default 10; 0 lifts
 * it to measure what the ratio alone costs), as a generator has it after its first seconds: each
 * "on" run starts with the cap's burst already drawn (see drainTraceBurst).
 *
 * Prints one JSON line per setting with episodes/s and the overhead against "off": the median
 * of the per-round ratios with their range and quartiles, the CPU of the export flush each "on"
 * run is charged, and the load average before and after.
 */
import { createServer, type Server } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { lastValueFrom, map, merge, share, type Observable } from 'rxjs';
import { envFactory } from '../envs/registry.js';
import type { EnvName } from '../envs/types.js';
import { annotateGroundTruth } from '../operators/annotate-ground-truth.js';
import { filterMalformedRows, SPA_MALFORMED_FILTER } from '../operators/filter-malformed.js';
import { toTrajectory } from '../operators/to-trajectory.js';
import type { Outbound } from '../schemas/outbound.js';
import { episodeConfig, type EpisodeConfig } from '../streams/episodes/episode-config.js';
import { episodes } from '../streams/episodes/episodes.js';
import { generatorPipeline } from '../streams/generator-pipeline.js';
import { builtinPolicy } from '../streams/policies/builtin.js';
import { onnxPolicy, type OnnxPolicy } from '../streams/policies/onnx/index.js';
import type { Policy } from '../streams/policies/policy.js';
import { toRejected } from '../streams/sft-outputs.js';
import { episodeTraces } from '../streams/telemetry/episode-spans.js';
import {
  DEFAULT_SAMPLE_RATIO,
  drawEpisode,
  resolveTelemetryOptions,
  startTelemetry,
  TRACE_BURST_SECONDS,
} from '../streams/telemetry/telemetry.js';
import { loadAverage, median, quantile } from './stats.js';

let onnx: OnnxPolicy | undefined;

/**
 * The policy of every run: a fresh seeded random policy (the worst case: ~0.3 ms of work per
 * episode), or with SPA_BENCH_POLICY=<artifact folder> the ONNX policy, greedy (so every run
 * plays the same episodes), 64 new tokens per turn, loaded once.
 */
function benchPolicy(config: EpisodeConfig): Policy {
  return onnx ?? builtinPolicy('random', { mode: config.mode, seed: 7 });
}

/**
 * The SFT side of generatorPipeline as it was before telemetry was wired in (no traceEpisodes,
 * traceStage or meterOutbound): "bare" shows what the hooks cost while telemetry is off.
 */
function barePipeline(config: EpisodeConfig, env: EnvName): Observable<Outbound> {
  const now = Date.now;
  const policy = benchPolicy(config);
  const trajectories = episodes(config, envFactory({ name: env, puzzles: 'generated' }), policy).pipe(
    toTrajectory(now),
    share(),
  );
  const sft = trajectories.pipe(
    annotateGroundTruth({ annotation: 'gt' }),
    filterMalformedRows(SPA_MALFORMED_FILTER, { maskTransitions: false }),
    map((v): Outbound =>
      v.accepted
        ? { topic: 'sft', key: v.value.trajectory_id, record: v.value }
        : { topic: 'dlq', key: v.rejection.key, record: toRejected(v.rejection, now()) },
    ),
  );
  const raw = trajectories.pipe(
    map((t): Outbound => ({ topic: 'trajectories', key: t.trajectory_id, record: t })),
  );
  return merge(raw, sft);
}

/** A local OTLP/HTTP endpoint that reads and discards what it is sent (the export cost stays in). */
async function discardingReceiver(): Promise<{ url: string; server: Server }> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`, server };
}

/** The real generator pipeline (streams/generator-pipeline.ts, telemetry hooks included). */
function generator(config: EpisodeConfig, env: EnvName): Observable<Outbound> {
  const policy = benchPolicy(config);
  return generatorPipeline(config, envFactory({ name: env, puzzles: 'generated' }), policy, {
    target: 'sft',
  });
}

/**
 * CPU seconds (user + system) of this process for one run: on a shared 2-core box, wall time
 * swings with other processes' load, CPU time much less. The exporters' work (serialising
 * and posting spans, in this process) is included, and so is the discarding receiver's.
 */
async function timeRun(
  pipeline: () => Observable<Outbound>,
  after?: () => Promise<void>,
): Promise<{ seconds: number; afterSeconds: number }> {
  collectGarbage(); // each run starts from a clean heap, not paying for the previous run's garbage
  const start = process.cpuUsage();
  await lastValueFrom(pipeline().pipe(map(() => 0)), { defaultValue: 0 });
  const ran = process.cpuUsage();
  await after?.();
  return { seconds: cpuSeconds(start), afterSeconds: cpuSeconds(ran) };
}

/**
 * Takes the trace cap's burst (its first TRACE_BURST_SECONDS' worth of traces) out of the bucket
 * before a timed "on" run, untimed: a generator spends it once, in its first seconds, and then
 * traces at most `perSecond` episodes a second. Without this every ~1 s run would trace the
 * whole burst (~100 episodes at the default) and the figure would be a process's first second,
 * not its steady state. The burst is a per-process cost, like start and shutdown.
 */
function drainTraceBurst(ratio: number, perSecond: number): void {
  if (ratio === 0 || perSecond === 0) return;
  const burst = Math.max(1, perSecond * TRACE_BURST_SECONDS);
  for (let drawn = 0; drawn < burst;) if (drawEpisode()) drawn++;
}

const cpuSeconds = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e6;
};

// Expose V8's gc() without a command-line flag (bin/bench.mjs runs plain node).
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

const percent = (ratio: number) => Number(((ratio - 1) * 100).toFixed(1));

/**
 * Runs `rounds` rounds of bare/off/on measurements for one sample ratio. "on" is charged for the
 * run plus a flush of its spans and metrics (the export work the run caused; a generator
 * exports every 5 s (spans) and 10 s (metrics), so one flush per ~1 s run charges more export
 * calls than it makes: `flushMs` says how much); starting and shutting telemetry down are
 * per-process costs, reported apart in ms. Each round runs every setting twice, mirrored
 * (A B C C B A), so a load that rises or falls steadily during the round weighs on each setting
 * equally; the overhead is the median of the per-round on/off ratios of the summed CPU times.
 * `rounds` is a multiple of 3 so each setting leads (and sits in the middle) equally often.
 */
export async function measureTelemetryOverhead(
  env: EnvName,
  episodeCount: number,
  sampleRatio: number,
  rounds = 15,
) {
  if (rounds % 3 !== 0) throw new RangeError(`rounds ${rounds}: must be a multiple of 3`);
  const loadBefore = loadAverage();
  const groups = 8;
  const groupSize = 8;
  const config = episodeConfig({
    env,
    groups,
    groupSize,
    batches: Math.ceil(episodeCount / (groups * groupSize)),
  });
  // The cap as a user gets it: SPA_TRACE_MAX_PER_SECOND, else the default.
  const { maxTracesPerSecond } = resolveTelemetryOptions({ serviceName: 'spa-bench' });
  const receiver = await discardingReceiver();
  // Per round, each setting's CPU seconds summed over its two runs; ms lists are per "on" run.
  const [bare, off, on]: [number[], number[], number[]] = [[], [], []];
  const [startMs, flushMs, stopMs]: [number[], number[], number[]] = [[], [], []];
  const runOn = async (ratio = sampleRatio, cap = maxTracesPerSecond) => {
    let cpu = process.cpuUsage();
    const telemetry = await startTelemetry({
      serviceName: 'spa-bench',
      otlpEndpoint: receiver.url,
      metricsPort: 0,
      sampleRatio: ratio,
      maxTracesPerSecond: cap,
      env: { SPA_TRACE_STAGES: process.env['SPA_TRACE_STAGES'] },
    });
    startMs.push(cpuSeconds(cpu) * 1000);
    drainTraceBurst(ratio, cap);
    const run = await timeRun(
      () => generator(config, env),
      () => telemetry.flush(),
    );
    flushMs.push(run.afterSeconds * 1000);
    cpu = process.cpuUsage();
    await telemetry.shutdown();
    stopMs.push(cpuSeconds(cpu) * 1000);
    episodeTraces.clear();
    return run.seconds;
  };
  try {
    // Warm the SDK's span paths (JIT) as a long run would: at small ratios a short run records
    // too few spans for V8 to optimise them, and cold spans cost several times warm ones.
    await runOn(1, 0);
    const settings: [number[], () => Promise<number>][] = [
      [off, async () => (await timeRun(() => generator(config, env))).seconds],
      [bare, async () => (await timeRun(() => barePipeline(config, env))).seconds],
      [on, () => runOn()],
    ];
    for (let round = 0; round < rounds + 1; round++) {
      // Rotate which setting leads, and mirror the order: A B C C B A.
      const order = settings.map((_, i) => settings[(i + round) % settings.length]!);
      const sums = new Map<number[], number>();
      for (const [list, run] of [...order, ...[...order].reverse()])
        sums.set(list, (sums.get(list) ?? 0) + (await run()));
      for (const [list, seconds] of sums) list.push(seconds);
      if (round === 0) [off, bare, on, startMs, flushMs, stopMs].forEach((list) => list.splice(0)); // warm-up
    }
  } finally {
    receiver.server.close();
  }
  const episodesRun = config.batches * groups * groupSize;
  const overheads = on.map((seconds, round) => seconds / off[round]!);
  return {
    env,
    episodes: episodesRun,
    sampleRatio,
    maxTracesPerSecond,
    rounds,
    episodesPerSecondBare: Math.round((2 * episodesRun) / median(bare)),
    episodesPerSecondOff: Math.round((2 * episodesRun) / median(off)),
    episodesPerSecondOn: Math.round((2 * episodesRun) / median(on)),
    overheadPercent: percent(median(overheads)),
    overheadRangePercent: [percent(Math.min(...overheads)), percent(Math.max(...overheads))],
    overheadQuartilesPercent: [percent(quantile(overheads, 0.25)), percent(quantile(overheads, 0.75))],
    hooksOffPercent: percent(median(off.map((seconds, round) => seconds / bare[round]!))),
    startMs: Math.round(median(startMs)),
    flushMs: Number(median(flushMs).toFixed(1)),
    shutdownMs: Math.round(median(stopMs)),
    stageSpans: process.env['SPA_TRACE_STAGES'] === '1',
    load: [loadBefore, loadAverage()],
  };
}

/**
 * `npm run bench -- telemetry [env] [episodes] [sampleRatio…]`; SPA_TRACE_STAGES=1 adds stage
 * spans, SPA_BENCH_POLICY=<artifact folder> runs the ONNX policy instead of the random one.
 */
export async function run(args: string[]): Promise<void> {
  const [envName, countText, ...ratios] = args;
  const env = (envName ?? 'sokoban') as EnvName;
  const count = countText ? Number(countText) : 2048;
  const rounds = Number(process.env['SPA_BENCH_ROUNDS'] ?? 15);
  const folder = process.env['SPA_BENCH_POLICY'];
  onnx = folder ? await onnxPolicy({ folder, temperature: 0, maxNewTokens: 64, seed: 3 }) : undefined;
  try {
    for (const ratio of ratios.length > 0 ? ratios.map(Number) : [DEFAULT_SAMPLE_RATIO, 1])
      console.log(
        JSON.stringify({
          policy: onnx?.name ?? 'random',
          ...(await measureTelemetryOverhead(env, count, ratio, onnx ? 3 : rounds)),
        }),
      );
  } finally {
    await onnx?.close?.();
  }
}
