/**
 * What telemetry costs the generator (the target: at most 5% slower): the real generator pipeline
 * (streams/generator-pipeline.ts, random policy, no Kafka) with telemetry off vs on, where
 * "on" means episode spans with turn events for the sampled episodes, sampled stage timing,
 * spa_* counters on every record, spans exported over OTLP/HTTP to a local receiver and
 * metrics served for Prometheus; "bare" is the same pipeline without the telemetry hooks.
 *
 *   npm run bench -- telemetry [env] [episodes] [sampleRatio…]     (SPA_BENCH_ROUNDS: see run())
 *
 * Every run is timed on three clocks (Times): the main thread's CPU time, the figure the result is
 * stated on, the process's CPU time and wall time beside it.
 *
 * Two designs, chosen by SPA_BENCH_TELEMETRY_DESIGN (default `in-process`):
 * - `in-process`: one process alternates the settings, each round running each RUNS_PER_ROUND
 *   times in mirrored order and keeping its fastest run (measureTelemetryOverhead). Cheap, but
 *   every setting runs in a process whose JIT and inline caches the other settings have shaped
 *   (the hooks' Subscriber subclasses make RxJS call sites polymorphic, the SDK's code is loaded
 *   and warm), which no generator process has.
 * - `process`: each round spawns one child process per setting (bare, off, on; the order rotates
 *   and reverses across rounds), and each child runs its one setting for its whole life: warm-up,
 *   then SPA_BENCH_RUNS_PER_PROCESS (default 5) timed runs, reporting its fastest
 *   (measureTelemetryOverheadPerProcess). Costs a process start per measurement and takes the
 *   process-to-process spread into each ratio.
 *
 * The per-second trace cap applies as configured (SPA_TRACE_MAX_PER_SECOND, default 10; 0 lifts
 * it to measure what the ratio alone costs), as a generator has it after its first seconds: each
 * "on" run starts with the cap's burst already drawn (see drainTraceBurst).
 *
 * Prints one JSON line per sample ratio with episodes/s and the overhead against "off": the median
 * of the per-round ratios with its 95% confidence interval, quartiles and range (each "on" run
 * charged its share of an export flush at a generator's 5 s interval), the same on the other two
 * clocks, the overhead with the whole flush charged to every run, the flush's CPU, the load average
 * before and after, and which design produced it.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
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
import { builtinPolicy } from '../policies/builtin.js';
import { onnxPolicy, type OnnxPolicy } from '../policies/onnx/index.js';
import type { Policy } from '../policies/policy.js';
import { toRejected } from '../streams/sft-outputs.js';
import { episodeTraces } from '../streams/telemetry/episode-spans.js';
import {
  DEFAULT_SAMPLE_RATIO,
  drawEpisode,
  resolveTelemetryOptions,
  startTelemetry,
  TRACE_BURST_SECONDS,
} from '../streams/telemetry/telemetry.js';
import { loadAverage, median, medianInterval, quantile } from './stats.js';

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

/** Every run's episodes: `episodeCount` rounded up to whole batches of 8 groups of 8. */
function benchConfig(env: EnvName, episodeCount: number): EpisodeConfig {
  const groups = 8;
  const groupSize = 8;
  return episodeConfig({ env, groups, groupSize, batches: Math.ceil(episodeCount / (groups * groupSize)) });
}

/** The cap as a user gets it: SPA_TRACE_MAX_PER_SECOND, else the default. */
const configuredCap = () => resolveTelemetryOptions({ serviceName: 'spa-bench' }).maxTracesPerSecond;

/** Telemetry "on" through the Node SDK: OTLP export to `otlpEndpoint` (its default protocol), a scrape endpoint on a free port. */
function startBenchTelemetry(otlpEndpoint: string, sampleRatio: number, maxTracesPerSecond: number) {
  return startTelemetry({
    serviceName: 'spa-bench',
    otlpEndpoint,
    metricsPort: 0,
    sampleRatio,
    maxTracesPerSecond,
  });
}

/**
 * The three clocks every run is timed on:
 * - `thread`: CPU time of the main thread, the one the pipeline runs on (Linux's
 *   /proc/self/task/<pid>/schedstat, ns): what the pipeline's throughput is made of, unmoved by
 *   the box's other processes taking the core away (wall time) and by V8's helper threads
 *   (concurrent marking and sweeping, compiling), whose work runs beside the pipeline, not in it.
 *   The overhead the bench states as its result ("at most 5% slower").
 * - `process`: CPU time of the whole process (`process.cpuUsage`), helper threads included.
 * - `wall`: elapsed time, what a user sees, and the box's load with it.
 * Where schedstat cannot be read (not Linux), `thread` falls back to `process`, and says so.
 */
interface Times {
  readonly thread: number;
  readonly process: number;
  readonly wall: number;
}

type Clock = keyof Times;

/** A Times whose every clock is `value(clock)`. */
const perClock = (value: (clock: Clock) => number): Times => ({
  thread: value('thread'),
  process: value('process'),
  wall: value('wall'),
});

const mainThreadStat = `/proc/self/task/${process.pid}/schedstat`;
const threadClockSource: 'schedstat' | 'process' = (() => {
  try {
    readFileSync(mainThreadStat, 'utf8');
    return 'schedstat';
  } catch {
    return 'process';
  }
})();

/** All three clocks now, in seconds (each from its own origin: only differences mean anything). */
function readClocks(): Times {
  const cpu = process.cpuUsage();
  const processSeconds = (cpu.user + cpu.system) / 1e6;
  const thread =
    threadClockSource === 'schedstat'
      ? Number(readFileSync(mainThreadStat, 'utf8').split(' ', 1)[0]) / 1e9
      : processSeconds;
  return { thread, process: processSeconds, wall: performance.now() / 1000 };
}

/** The time from one reading of the clocks to a later one, on each clock. */
const between = (from: Times, to: Times): Times => perClock((clock) => to[clock] - from[clock]);

/**
 * One run on the three clocks, plus the export flush after it (`after`, untimed by the run)
 * charged as a generator pays it: a share of the flush's CPU in proportion to the run's wall
 * time over the 5 s export interval (see EXPORT_INTERVAL_SECONDS). Wall time is charged the
 * flush's main-thread CPU (the flush's own wall time is mostly waiting on the receiver).
 *
 * No garbage collection is forced before a run: a forced full collection leaves V8 sweeping and
 * releasing memory on its helper threads during the next run (measured: 2,048 episodes took 397
 * ms of process CPU after a forced collection, 161 ms without, on a main thread of 191 vs 151
 * ms), work of the bench's making that no generator does. Each setting runs in mirrored order
 * (A B C C B A), so the garbage a run leaves to the next falls on every setting alike.
 */
async function timeRun(pipeline: () => Observable<Outbound>, after?: () => Promise<void>): Promise<TimedRun> {
  const start = readClocks();
  await lastValueFrom(pipeline().pipe(map(() => 0)), { defaultValue: 0 });
  const ran = readClocks();
  await after?.();
  const [run, flush] = [between(start, ran), between(ran, readClocks())];
  const share = Math.min(1, run.wall / EXPORT_INTERVAL_SECONDS);
  // Wall time is charged the flush's main-thread CPU, as said above.
  const charge = (part: number): Times =>
    perClock((clock) => run[clock] + flush[clock === 'wall' ? 'thread' : clock] * part);
  return { seconds: charge(share), wholeFlushSeconds: charge(1), flushMs: after ? flush.process * 1000 : 0 };
}

/**
 * How often a generator's telemetry exports: spans every 5 s (BatchSpanProcessor's default,
 * OTEL_BSP_SCHEDULE_DELAY), metrics every 60 s (OTEL_METRIC_EXPORT_INTERVAL's default). A timed run of well under 5 s flushes both at its end,
 * so it is charged that flush's CPU in proportion to its wall time over 5 s (at most the whole flush),
 * as a generator pays it; the overhead with the whole flush charged to every run is printed beside it.
 */
const EXPORT_INTERVAL_SECONDS = 5;

/** One timed run on each clock (the export flush charged as above, and whole), and the flush's process CPU. */
interface TimedRun {
  readonly seconds: Times;
  readonly wholeFlushSeconds: Times;
  readonly flushMs: number;
}

/**
 * Takes the trace cap's burst (its first TRACE_BURST_SECONDS' worth of traces) out of the bucket
 * before a timed "on" run, untimed: a generator spends it once, in its first seconds, and then
 * traces at most `perSecond` episodes a second. Without this every short run would trace the
 * whole burst (~100 episodes at the default) and the figure would be a process's first second,
 * not its steady state. The burst is a per-process cost, like start and shutdown.
 */
function drainTraceBurst(ratio: number, perSecond: number): void {
  if (ratio === 0 || perSecond === 0) return;
  const burst = Math.max(1, perSecond * TRACE_BURST_SECONDS);
  for (let drawn = 0; drawn < burst;) if (drawEpisode()) drawn++;
}

/** CPU milliseconds of this process since `since` (telemetry's start and shutdown). */
const cpuMs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1e3;
};

/**
 * Runs `rounds` rounds of bare/off/on measurements for one sample ratio. "on" is charged for the
 * run plus its share of a flush of its spans and metrics (the export work the run caused, at a
 * generator's export interval: see timeRun; `flushMs` is the whole flush, and
 * `overheadWholeFlushPercent` the overhead with all of it charged); starting and shutting
 * telemetry down are per-process costs, reported apart in ms. Each round runs every setting
 * RUNS_PER_ROUND times in mirrored passes (A B C C B A A B C C B A), so a load that rises or falls
 * during the round weighs on each setting equally, and takes each setting's fastest run as the
 * round's figure (see RUNS_PER_ROUND); the overhead is the median of the per-round on/off ratios.
 * `rounds` is a multiple of 3 so each setting leads (and sits in the middle) equally often.
 */
export async function measureTelemetryOverhead(
  env: EnvName,
  episodeCount: number,
  sampleRatio: number,
  rounds = DEFAULT_ROUNDS,
) {
  if (rounds % 3 !== 0) throw new RangeError(`rounds ${rounds}: must be a multiple of 3`);
  const loadBefore = loadAverage();
  const config = benchConfig(env, episodeCount);
  const maxTracesPerSecond = configuredCap();
  const receiver = await discardingReceiver();
  // Per round, each setting's fastest run (clock by clock); ms lists are per "on" run.
  const times: Record<Setting, Times[]> = { bare: [], off: [], on: [] };
  const onWholeFlush: Times[] = [];
  const [startMs, flushMs, stopMs]: [number[], number[], number[]] = [[], [], []];
  const runOn = async (ratio = sampleRatio, cap = maxTracesPerSecond) => {
    let cpu = process.cpuUsage();
    const telemetry = await startBenchTelemetry(receiver.url, ratio, cap);
    startMs.push(cpuMs(cpu));
    drainTraceBurst(ratio, cap);
    const run = await timeRun(
      () => generator(config, env),
      () => telemetry.flush(),
    );
    flushMs.push(run.flushMs);
    cpu = process.cpuUsage();
    await telemetry.shutdown();
    stopMs.push(cpuMs(cpu));
    episodeTraces.clear();
    return run;
  };
  try {
    // Warm the SDK's span paths (JIT) as a long run would: at small ratios a short run records
    // too few spans for V8 to optimise them, and cold spans cost several times warm ones.
    await runOn(1, 0);
    const settings: [Setting, () => Promise<TimedRun>][] = [
      ['off', () => timeRun(() => generator(config, env))],
      ['bare', () => timeRun(() => barePipeline(config, env))],
      ['on', () => runOn()],
    ];
    for (let round = 0; round < rounds + 1; round++) {
      // Rotate which setting leads, and mirror the order: A B C C B A.
      const order = settings.map((_, i) => settings[(i + round) % settings.length]!);
      const runs: Record<Setting, TimedRun[]> = { bare: [], off: [], on: [] };
      const pass = [...order, ...[...order].reverse()];
      for (let p = 0; p < RUNS_PER_ROUND / 2; p++)
        for (const [setting, run] of pass) runs[setting].push(await run());
      if (round === 0) {
        [startMs, flushMs, stopMs].forEach((list) => list.splice(0)); // the round that warms up
        continue;
      }
      for (const setting of SETTINGS) times[setting].push(fastest(runs[setting].map((r) => r.seconds)));
      onWholeFlush.push(fastest(runs.on.map((r) => r.wholeFlushSeconds)));
    }
  } finally {
    receiver.server.close();
  }
  const episodesRun = config.batches * config.groups * config.groupSize;
  return {
    design: 'in-process',
    env,
    episodes: episodesRun,
    sampleRatio,
    maxTracesPerSecond,
    rounds,
    runsPerRound: RUNS_PER_ROUND,
    ...overheadSummary(times, onWholeFlush, episodesRun, { startMs, flushMs, stopMs }),
    load: [loadBefore, loadAverage()],
  };
}

/** The in-process design's rounds unless SPA_BENCH_ROUNDS says otherwise (see run()). */
const DEFAULT_ROUNDS = 30;

/**
 * Each setting's runs in a round; the fastest is the round's figure. On this box a run's time
 * swings by 7–25% from one run of the same code to the next (other tenants of the host, GC and
 * JIT timing); what slows a run only ever adds time, so the fastest of a few is the steadiest
 * estimate of what the code costs (Python's timeit documentation gives the same advice). Measured
 * with 2,048-episode runs and 30 rounds: the per-round on/off ratios' interquartile range was 7.6
 * points with two runs per setting summed and 3.4 with the fastest of four, at the same median.
 */
const RUNS_PER_ROUND = 4;

/** Each clock's least time over `runs` (clock by clock). */
const fastest = (runs: readonly Times[]): Times =>
  perClock((clock) => Math.min(...runs.map((t) => t[clock])));

const percent = (ratio: number) => Number(((ratio - 1) * 100).toFixed(1));

/**
 * The per-round ratios `numerator[i] / denominator[i]` as percentages over 1: their median, the
 * median's distribution-free 95% confidence interval (stats.ts), quartiles and range.
 */
function ratioSummary(numerator: readonly number[], denominator: readonly number[]) {
  const ratios = numerator.map((x, round) => x / denominator[round]!);
  const [low, high] = medianInterval(ratios, 0.95);
  return {
    percent: percent(median(ratios)),
    ci95Percent: [percent(low), percent(high)],
    quartilesPercent: [percent(quantile(ratios, 0.25)), percent(quantile(ratios, 0.75))],
    rangePercent: [percent(Math.min(...ratios)), percent(Math.max(...ratios))],
  };
}

/**
 * What both designs print from their per-round times per setting (each covering
 * `episodesPerFigure` episodes): episodes/s (wall), the overhead on the main thread's CPU time
 * (the result) as the median of the per-round on/off ratios with its 95% interval, quartiles and
 * range, the same on the process's CPU and on wall time, the hooks-off control, and the "on"
 * per-process costs in ms.
 */
function overheadSummary(
  times: Record<Setting, readonly Times[]>,
  onWholeFlush: readonly Times[],
  episodesPerFigure: number,
  ms: { startMs: number[]; flushMs: number[]; stopMs: number[] },
) {
  const on = (clock: Clock) => times.on.map((t) => t[clock]);
  const off = (clock: Clock) => times.off.map((t) => t[clock]);
  const rate = (setting: Setting) =>
    Math.round(episodesPerFigure / median(times[setting].map((t) => t.wall)));
  const thread = ratioSummary(on('thread'), off('thread'));
  return {
    episodesPerSecondBare: rate('bare'),
    episodesPerSecondOff: rate('off'),
    episodesPerSecondOn: rate('on'),
    overheadPercent: thread.percent,
    overheadCi95Percent: thread.ci95Percent,
    overheadQuartilesPercent: thread.quartilesPercent,
    overheadRangePercent: thread.rangePercent,
    overheadWholeFlushPercent: ratioSummary(
      onWholeFlush.map((t) => t.thread),
      off('thread'),
    ).percent,
    hooksOffPercent: ratioSummary(
      off('thread'),
      times.bare.map((t) => t.thread),
    ).percent,
    threadClock: threadClockSource === 'schedstat' ? 'main thread' : 'process (no schedstat)',
    processClock: ratioSummary(on('process'), off('process')),
    wallClock: ratioSummary(on('wall'), off('wall')),
    startMs: Math.round(median(ms.startMs)),
    flushMs: Number(median(ms.flushMs).toFixed(1)),
    shutdownMs: Math.round(median(ms.stopMs)),
    stageSpans: process.env['SPA_TRACE_STAGES'] === '1',
  };
}

type Setting = 'bare' | 'off' | 'on';
const SETTINGS: readonly Setting[] = ['bare', 'off', 'on'];

/** What a child process of the per-process design prints (the last line of its stdout). */
interface SettingReport {
  setting: Setting;
  policy: string;
  /** Its fastest timed run on each clock ("on": each charged its export flush's share, see timeRun). */
  seconds: Times;
  /** "on" only: the same with the whole flush charged to every run. */
  wholeFlushSeconds?: Times;
  /** "on" only: CPU ms of its one start and shutdown, and the median flush. */
  startMs?: number;
  flushMs?: number;
  shutdownMs?: number;
}

/**
 * One child of the per-process design: `setting` for this process's whole life, as a generator
 * runs it. Warm-up first, untimed: "on" runs once with every episode traced (telemetry started and
 * shut down, as measureTelemetryOverhead warms the SDK's span paths), then starts telemetry once
 * at the real ratio and cap and draws the burst; every setting then runs once more untimed (two
 * warm-up runs each), and `runs` timed runs follow. The fastest on each clock is reported (RUNS_PER_ROUND).
 */
async function measureOneSetting(
  setting: Setting,
  env: EnvName,
  episodeCount: number,
  sampleRatio: number,
  runs: number,
): Promise<SettingReport> {
  const config = benchConfig(env, episodeCount);
  const maxTracesPerSecond = configuredCap();
  const receiver = setting === 'on' ? await discardingReceiver() : undefined;
  try {
    const pipeline = setting === 'bare' ? () => barePipeline(config, env) : () => generator(config, env);
    let startMs: number | undefined;
    let telemetry: Awaited<ReturnType<typeof startTelemetry>> | undefined;
    if (receiver) {
      const warm = await startBenchTelemetry(receiver.url, 1, 0);
      await timeRun(pipeline, () => warm.flush());
      await warm.shutdown();
      episodeTraces.clear();
      const cpu = process.cpuUsage();
      telemetry = await startBenchTelemetry(receiver.url, sampleRatio, maxTracesPerSecond);
      startMs = cpuMs(cpu);
      drainTraceBurst(sampleRatio, maxTracesPerSecond);
    } else await timeRun(pipeline);
    const flush = telemetry ? () => telemetry.flush() : undefined;
    await timeRun(pipeline, flush);
    const timed: TimedRun[] = [];
    for (let run = 0; run < runs; run++) timed.push(await timeRun(pipeline, flush));
    const seconds = fastest(timed.map((t) => t.seconds));
    const report: SettingReport = { setting, policy: onnx?.name ?? 'random', seconds };
    if (telemetry) {
      const cpu = process.cpuUsage();
      await telemetry.shutdown();
      Object.assign(report, {
        wholeFlushSeconds: fastest(timed.map((t) => t.wholeFlushSeconds)),
        startMs,
        flushMs: median(timed.map((t) => t.flushMs)),
        shutdownMs: cpuMs(cpu),
      });
    }
    return report;
  } finally {
    receiver?.server.close();
  }
}

/** Runs one child process (`bin/bench.mjs telemetry --child …`, the bench's own loader) and reads its report. */
function spawnSetting(
  setting: Setting,
  env: EnvName,
  episodeCount: number,
  sampleRatio: number,
  runs: number,
): Promise<SettingReport> {
  const entry = join(dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'bench.mjs');
  const args = [
    entry,
    'telemetry',
    '--child',
    setting,
    ...[runs, env, episodeCount, sampleRatio].map(String),
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const last = out.trim().split('\n').at(-1) ?? '';
      if (code === 0 && last.startsWith('{')) resolve(JSON.parse(last) as SettingReport);
      else reject(new Error(`bench telemetry --child ${setting} exited ${code}:\n${out.slice(-2000)}`));
    });
  });
}

/**
 * The per-process design: each round spawns one child per setting (measureOneSetting), one after
 * the other, the leading setting rotating from round to round and the order reversed in every
 * other block of three rounds, so over six rounds each of the six orders runs once and over three
 * each setting leads once. The overhead is the median of the per-round on/off ratios of the
 * children's fastest runs (main-thread CPU; the other clocks beside it); start, flush and shutdown are the "on" children's.
 */
async function measureTelemetryOverheadPerProcess(
  env: EnvName,
  episodeCount: number,
  sampleRatio: number,
  rounds = 15,
  runsPerProcess = 5,
) {
  if (rounds % 3 !== 0) throw new RangeError(`rounds ${rounds}: must be a multiple of 3`);
  if (!(Number.isInteger(runsPerProcess) && runsPerProcess > 0))
    throw new RangeError(`runs per process ${runsPerProcess}: must be a positive integer`);
  const loadBefore = loadAverage();
  const config = benchConfig(env, episodeCount);
  const settings: Setting[] = ['off', 'bare', 'on'];
  const seconds: Record<Setting, Times[]> = { bare: [], off: [], on: [] };
  const onWholeFlush: Times[] = [];
  const [startMs, flushMs, stopMs]: [number[], number[], number[]] = [[], [], []];
  let policy = 'random';
  for (let round = 0; round < rounds; round++) {
    const order = settings.map((_, i) => settings[(i + round) % settings.length]!);
    if (Math.floor(round / 3) % 2 === 1) order.reverse();
    for (const setting of order) {
      const report = await spawnSetting(setting, env, episodeCount, sampleRatio, runsPerProcess);
      seconds[setting].push(report.seconds);
      policy = report.policy;
      if (setting === 'on') {
        onWholeFlush.push(report.wholeFlushSeconds!);
        startMs.push(report.startMs ?? NaN);
        flushMs.push(report.flushMs ?? NaN);
        stopMs.push(report.shutdownMs ?? NaN);
      }
    }
  }
  const episodesRun = config.batches * config.groups * config.groupSize;
  return {
    policy,
    design: 'process',
    env,
    episodes: episodesRun,
    sampleRatio,
    maxTracesPerSecond: configuredCap(),
    rounds,
    runsPerProcess,
    // Each round's figure is a child's fastest run.
    ...overheadSummary(seconds, onWholeFlush, episodesRun, { startMs, flushMs, stopMs }),
    load: [loadBefore, loadAverage()],
  };
}

/**
 * `npm run bench -- telemetry [env] [episodes] [sampleRatio…]`; SPA_TRACE_STAGES=1 adds stage
 * spans, SPA_BENCH_POLICY=<artifact folder> runs the ONNX policy instead of the random one,
 * SPA_BENCH_TELEMETRY_DESIGN=process|in-process picks the design (default in-process), and
 * SPA_BENCH_RUNS_PER_PROCESS (default 5) the process design's timed runs per child.
 * `telemetry --child <setting> <runs> <env> <episodes> <sampleRatio>` is one child of the
 * process design: it prints its SettingReport as JSON.
 */
export async function run(args: string[]): Promise<void> {
  const child = args[0] === '--child' ? { setting: args[1], runs: Number(args[2]) } : undefined;
  const [envName, countText, ...ratios] = child ? args.slice(3) : args;
  const env = (envName ?? 'sokoban') as EnvName;
  const count = countText ? Number(countText) : 2048;
  const design = process.env['SPA_BENCH_TELEMETRY_DESIGN'] ?? 'in-process';
  if (design !== 'process' && design !== 'in-process')
    throw new Error(`SPA_BENCH_TELEMETRY_DESIGN=${design}: must be "process" or "in-process"`);
  const rounds = Number(process.env['SPA_BENCH_ROUNDS'] ?? (design === 'process' ? 15 : DEFAULT_ROUNDS));
  const folder = process.env['SPA_BENCH_POLICY'];
  const sampleRatios = ratios.length > 0 ? ratios.map(Number) : [DEFAULT_SAMPLE_RATIO];
  if (design === 'process' && !child) {
    const runsPerProcess = Number(process.env['SPA_BENCH_RUNS_PER_PROCESS'] ?? 5);
    for (const ratio of sampleRatios)
      console.log(
        JSON.stringify(
          await measureTelemetryOverheadPerProcess(env, count, ratio, folder ? 3 : rounds, runsPerProcess),
        ),
      );
    return;
  }
  onnx = folder ? await onnxPolicy({ folder, temperature: 0, maxNewTokens: 64, seed: 3 }) : undefined;
  try {
    if (child) {
      const { setting, runs } = child;
      if (setting !== 'bare' && setting !== 'off' && setting !== 'on')
        throw new Error(`bench telemetry --child ${setting}: must be bare, off or on`);
      const report = await measureOneSetting(setting, env, count, sampleRatios[0]!, runs);
      console.log(JSON.stringify(report));
      return;
    }
    for (const ratio of sampleRatios)
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
