import { metrics, SpanStatusCode, trace } from '@opentelemetry/api';
import { concat, lastValueFrom, map, merge, of, share, Subject, throwError, toArray } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { envFactory } from '../../envs/registry.js';
import { toRollout } from '../../operators/to-rollout.js';
import { toTrajectory } from '../../operators/to-trajectory.js';
import type { Outbound } from '../../schemas/outbound.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { episodes } from '../../streams/episodes/episodes.js';
import { generatorPipeline } from '../../streams/generator-pipeline.js';
import { builtinPolicy } from '../../policies/builtin.js';
import { episodeKeyOf, outboundTraceparent } from '../../streams/telemetry/episode-key.js';
import {
  EpisodeTraceRegistry,
  episodeTraces,
  startEpisodeSpan,
} from '../../streams/telemetry/episode-spans.js';
import { meterOutbound } from '../../streams/telemetry/meter-outbound.js';
import { ConsumerLagTable, spaMetrics } from '../../streams/telemetry/metrics.js';
import {
  DEFAULT_MAX_TRACES_PER_SECOND,
  DEFAULT_SAMPLE_RATIO,
  TRACE_BURST_SECONDS,
  TraceBudget,
  resolveTelemetryOptions,
  samplerRatio,
  startTelemetry,
  telemetryActive,
  withTelemetry,
  type TelemetryOptions,
} from '../../streams/telemetry/telemetry.js';
import { traceEpisodes } from '../../streams/telemetry/trace-episodes.js';
import { traceStage } from '../../streams/telemetry/trace-stage.js';
import { startInMemoryTelemetry, type InMemoryTelemetry } from './harness.js';

let running: InMemoryTelemetry | undefined;
afterEach(async () => {
  await running?.telemetry.shutdown();
  running = undefined;
  episodeTraces.clear();
});

const config = episodeConfig({
  env: 'sokoban',
  groups: 3,
  groupSize: 2,
  batches: 2,
  mode: 'base',
  runId: 'otel',
});
const makeEnv = envFactory({ name: 'sokoban', puzzles: 'generated' });
const now = () => 1_700_000_000_000;
const policy = () => builtinPolicy('random', { mode: 'base', seed: 5 });

/** The rollout side of the generator with the hooks the lead wires into generator-pipeline.ts. */
function instrumentedRollouts() {
  const trajectories = episodes(config, makeEnv, policy()).pipe(
    traceEpisodes(),
    traceStage('toTrajectory', toTrajectory(now), { timingEvery: 1 }),
    share(),
  );
  return merge(
    trajectories.pipe(map((t): Outbound => ({ topic: 'trajectories', key: t.trajectory_id, record: t }))),
    trajectories.pipe(
      traceStage('toRollout', toRollout(), { timingEvery: 4 }),
      map((r): Outbound => ({ topic: 'rollouts', key: r.group_id, record: r })),
    ),
  ).pipe(meterOutbound());
}

describe('resolveTelemetryOptions', () => {
  const resolve = (env: Record<string, string>, options: Partial<TelemetryOptions> = {}) =>
    resolveTelemetryOptions({ serviceName: 'spa-generator', ...options }, env);

  it('is off unless an exporter is asked for; an OTLP endpoint alone means otlp for both signals', () => {
    expect(resolve({}).enabled).toBe(false);
    expect(resolve({ OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none' }).enabled).toBe(false);
    expect(resolve({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/' })).toEqual({
      enabled: true,
      disabledByEnv: false,
      serviceName: 'spa-generator',
      resourceAttributes: {},
      tracesExporters: ['otlp'],
      metricsExporters: ['otlp'],
      sampleRatio: DEFAULT_SAMPLE_RATIO,
      maxTracesPerSecond: DEFAULT_MAX_TRACES_PER_SECOND,
      stageSpans: false,
      asyncContext: false,
    });
    expect(resolve({ OTEL_TRACES_EXPORTER: 'console' })).toMatchObject({
      enabled: true,
      tracesExporters: ['console'],
      metricsExporters: [],
    });
    expect(resolve({ OTEL_METRICS_EXPORTER: 'prometheus' })).toMatchObject({
      enabled: true,
      tracesExporters: [],
      metricsExporters: ['prometheus'],
    });
    // A per-signal endpoint turns on its own signal only.
    expect(resolve({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toMatchObject({
      tracesExporters: ['otlp'],
      metricsExporters: [],
    });
  });

  it('flags stand for variables: --otlp-endpoint for the endpoint, --metrics-port adds prometheus', () => {
    expect(resolve({ OTEL_METRICS_EXPORTER: 'console' }, { metricsPort: 0 })).toMatchObject({
      metricsPort: 0,
      metricsExporters: ['console', 'prometheus'],
      tracesExporters: [],
    });
    expect(
      resolve(
        { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' },
        { otlpEndpoint: 'http://127.0.0.1:4318/' },
      ),
    ).toMatchObject({ otlpEndpoint: 'http://127.0.0.1:4318', tracesExporters: ['otlp'] });
    expect(resolve({ OTEL_TRACES_EXPORTER: 'console,otlp,console' }).tracesExporters).toEqual([
      'console',
      'otlp',
    ]);
    expect(resolve({ SPA_TRACE_STAGES: 'yes' }, { sampleRatio: 0.25 })).toMatchObject({
      sampleRatio: 0.25,
      stageSpans: true,
    });
  });

  it('names the bad input', () => {
    const bad =
      (env: Record<string, string>, options: Partial<TelemetryOptions> = {}) =>
      () =>
        resolve(env, options);
    expect(bad({}, { metricsPort: 70000 })).toThrow(/metrics port "70000"/);
    expect(bad({}, { sampleRatio: 2 })).toThrow(/sample ratio "2"/);
    expect(bad({ OTEL_EXPORTER_OTLP_ENDPOINT: 'localhost:4318' })).toThrow(
      /OTEL_EXPORTER_OTLP_ENDPOINT "localhost:4318" must be an http/,
    );
    expect(bad({}, { otlpEndpoint: 'collector' })).toThrow(/--otlp-endpoint "collector" must be an http/);
    expect(bad({ SPA_TRACE_STAGES: 'maybe' })).toThrow(/SPA_TRACE_STAGES="maybe" must be 1\/true/);
    expect(bad({ OTEL_TRACES_EXPORTER: 'jaeger' })).toThrow(
      /OTEL_TRACES_EXPORTER="jaeger": use otlp, console, zipkin, none/,
    );
    expect(bad({ OTEL_METRICS_EXPORTER: 'otlp,none' })).toThrow(/OTEL_METRICS_EXPORTER="otlp,none"/);
    expect(bad({ OTEL_EXPORTER_OTLP_PROTOCOL: 'http' })).toThrow(
      /OTEL_EXPORTER_OTLP_PROTOCOL="http" must be one of http\/protobuf, http\/json, grpc/,
    );
  });

  it('sample ratio: option, then OTEL_TRACES_SAMPLER(+_ARG), then every episode (the standard default)', () => {
    const otel = { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' };
    expect(DEFAULT_SAMPLE_RATIO).toBe(1);
    expect(resolve({}).sampleRatio).toBe(1);
    expect(resolve(otel).sampleRatio).toBe(0.25);
    expect(resolve(otel, { sampleRatio: 0.75 }).sampleRatio).toBe(0.75);
    // The argument alone selects nothing: the sampler is what names a ratio.
    expect(resolve({ OTEL_TRACES_SAMPLER_ARG: '0.25' }).sampleRatio).toBe(DEFAULT_SAMPLE_RATIO);
  });

  it('traces per second: option, then SPA_TRACE_MAX_PER_SECOND, then the default; bad values name the setting', () => {
    const cap = (env: Record<string, string>, maxTracesPerSecond?: number) =>
      resolve(env, maxTracesPerSecond === undefined ? {} : { maxTracesPerSecond }).maxTracesPerSecond;
    expect(cap({})).toBe(DEFAULT_MAX_TRACES_PER_SECOND);
    expect(cap({ SPA_TRACE_MAX_PER_SECOND: '0' })).toBe(0);
    expect(cap({ SPA_TRACE_MAX_PER_SECOND: '2.5' }, 7)).toBe(7);
    expect(() => cap({ SPA_TRACE_MAX_PER_SECOND: 'lots' })).toThrow(/SPA_TRACE_MAX_PER_SECOND.*>= 0/);
    expect(() => cap({}, -1)).toThrow(/"-1"/);
  });

  it('the trace budget allows a burst of its capacity, then refills at its rate', () => {
    const budget = new TraceBudget(2, 0);
    const burst = Array.from({ length: 3 * TRACE_BURST_SECONDS }, () => budget.take(0)).filter(Boolean);
    expect(burst).toHaveLength(2 * TRACE_BURST_SECONDS);
    expect(budget.take(400)).toBe(false); // 0.8 of a token
    expect(budget.take(500)).toBe(true);
    expect(budget.take(500)).toBe(false);
    expect([1, 2, 3, 4].map(() => budget.take(60_000)).every(Boolean)).toBe(true); // refilled, up to capacity
  });

  it('OTEL_TRACES_SAMPLER: each supported sampler as an episode ratio; others and bad arguments throw', () => {
    const ratio = (OTEL_TRACES_SAMPLER: string, arg?: string) =>
      samplerRatio({ OTEL_TRACES_SAMPLER, ...(arg === undefined ? {} : { OTEL_TRACES_SAMPLER_ARG: arg }) });
    expect(samplerRatio({})).toBeUndefined();
    expect(ratio('always_on')).toBe(1);
    expect(ratio('parentbased_always_on')).toBe(1);
    expect(ratio('always_off')).toBe(0);
    expect(ratio('parentbased_always_off', '0.5')).toBe(0);
    expect(ratio('traceidratio', '0.1')).toBe(0.1);
    expect(ratio('ParentBased_TraceIdRatio', '0')).toBe(0);
    expect(ratio('parentbased_traceidratio')).toBe(1); // no argument: 1, as the OpenTelemetry SDKs do
    expect(() => ratio('parentbased_traceidratio', '1.5')).toThrow(/OTEL_TRACES_SAMPLER_ARG="1.5" must be/);
    expect(() => ratio('traceidratio', 'half')).toThrow(/OTEL_TRACES_SAMPLER_ARG="half"/);
    expect(() => ratio('toString')).toThrow(/OTEL_TRACES_SAMPLER="toString" is not supported/);
    expect(() => ratio('jaeger_remote')).toThrow(
      /OTEL_TRACES_SAMPLER="jaeger_remote" is not supported: use always_on/,
    );
  });

  it('OTEL_SDK_DISABLED=true turns off exporters from env or flags, unless enabled: true', () => {
    const off = { OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };
    expect(resolve(off)).toMatchObject({ enabled: false, disabledByEnv: true });
    expect(resolve({ OTEL_SDK_DISABLED: 'true' }, { metricsPort: 0 })).toMatchObject({ enabled: false });
    expect(resolve({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'console' }).enabled).toBe(false);
    expect(resolve(off, { enabled: true })).toMatchObject({ enabled: true, disabledByEnv: false });
    expect(resolve({ ...off, OTEL_SDK_DISABLED: 'false' })).toMatchObject({ enabled: true });
    expect(resolve({ OTEL_SDK_DISABLED: 'true' })).toMatchObject({ enabled: false, disabledByEnv: false });
    expect(() => resolve({ ...off, OTEL_SDK_DISABLED: 'maybe' })).toThrow(/OTEL_SDK_DISABLED="maybe"/);
  });
});

describe('the Node SDK reads the standard variables', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES go over the built-in name and SPA attributes', async () => {
    vi.stubEnv('OTEL_RESOURCE_ATTRIBUTES', 'service.name=from-attrs,spa.site=lab%2C1');
    running = await startInMemoryTelemetry({ resourceAttributes: { 'spa.run_id': 'r1' } });
    trace.getTracer('t').startSpan('s').end();
    const [fromAttributes] = await running.finished();
    expect(fromAttributes?.resource.attributes).toMatchObject({
      'service.name': 'from-attrs',
      'spa.site': 'lab,1',
      'spa.run_id': 'r1',
    });
    await running.telemetry.shutdown();
    vi.stubEnv('OTEL_SERVICE_NAME', 'gen-7');
    running = await startInMemoryTelemetry();
    trace.getTracer('t').startSpan('s').end();
    const [named] = await running.finished();
    expect(named?.resource.attributes['service.name']).toBe('gen-7');
    await running.telemetry.shutdown();
    vi.unstubAllEnvs();
    running = await startInMemoryTelemetry();
    trace.getTracer('t').startSpan('s').end();
    const [builtIn] = await running.finished();
    expect(builtIn?.resource.attributes['service.name']).toBe('spa-test');
  });

  it('OTEL_TRACES_SAMPLER(+_ARG) decides which episodes are traced', async () => {
    const attributes = { trajectoryId: 'r/t/b0/g0/m0', groupId: 'g', env: 'sokoban', seed: 1 };
    vi.stubEnv('OTEL_TRACES_SAMPLER', 'parentbased_traceidratio');
    vi.stubEnv('OTEL_TRACES_SAMPLER_ARG', '0');
    running = await startInMemoryTelemetry({ sampleRatio: undefined });
    expect(startEpisodeSpan(attributes).recording).toBe(false);
    await running.telemetry.shutdown();
    vi.stubEnv('OTEL_TRACES_SAMPLER', 'always_on');
    running = await startInMemoryTelemetry({ sampleRatio: undefined });
    expect(startEpisodeSpan(attributes).recording).toBe(true);
  });

  it('an OTEL_SDK_DISABLED run reports why on stderr and records nothing', async () => {
    vi.stubEnv('OTEL_SDK_DISABLED', 'true');
    const errors: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((text: string) => (errors.push(text), true)) as typeof process.stderr.write;
    try {
      const enabled = await withTelemetry(
        { serviceName: 's', metricsPort: 0 },
        async (telemetry) => telemetry.enabled,
      );
      expect(enabled).toBe(false);
    } finally {
      process.stderr.write = write;
    }
    expect(errors.join('')).toContain('[telemetry] off: OTEL_SDK_DISABLED=true');
  });
});

const generate = (target: 'sft' | 'rollouts') =>
  lastValueFrom(generatorPipeline(config, makeEnv, policy(), { target, now }).pipe(toArray()));

describe('EpisodeTraceRegistry', () => {
  it('holds at most its capacity, dropping the older half when the newer half is full', () => {
    const registry = new EpisodeTraceRegistry(4);
    const ids = ['a', 'b', 'c', 'd', 'e'];
    // An episode the registry does not hold gets unsampled ids when first asked, kept after.
    const first = new Map(ids.map((id) => [id, registry.traceparent(id)]));
    for (const traceparent of first.values())
      expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    expect(registry.size).toBe(3); // a and b dropped together when e arrived; c, d and e kept
    expect(ids.map((id) => registry.get(id) !== undefined)).toEqual([false, false, true, true, true]);
    expect(registry.traceparent('c')).toBe(first.get('c'));
    expect(registry.traceparent('a')).not.toBe(first.get('a')); // evicted: fresh ids
  });

  it('an episode played again undrawn gets fresh unsampled ids, not the earlier traced span', async () => {
    const attributes = { trajectoryId: 'r/t/b0/g0/m0', groupId: 'r/t/b0/g0', env: 'sokoban', seed: 1 };
    running = await startInMemoryTelemetry({ sampleRatio: 1 });
    startEpisodeSpan(attributes).end({ success: true });
    const traced = episodeTraces.traceparent(attributes.trajectoryId);
    expect(traced).toMatch(/-01$/);
    await running.telemetry.shutdown();
    running = await startInMemoryTelemetry({ sampleRatio: 0 });
    expect(startEpisodeSpan(attributes).recording).toBe(false);
    expect(episodeTraces.isSampled(attributes.trajectoryId)).toBe(false);
    expect(episodeTraces.traceparent(attributes.trajectoryId)).toMatch(/-00$/);
  });
});

describe('telemetry off', () => {
  it('uses the no-op API: nothing recorded, nothing registered', async () => {
    const telemetry = await startTelemetry({ serviceName: 'spa-test' });
    expect(telemetry.enabled).toBe(false);
    expect(telemetryActive()).toBe(false);
    expect(trace.getTracer('x').startSpan('s').isRecording()).toBe(false);
    const out = await generate('sft');
    expect(out.length).toBeGreaterThan(0);
    expect(episodeTraces.size).toBe(0);
    expect(outboundTraceparent(out[0]!)).toBeUndefined();
    await telemetry.shutdown();
  });

  it('the hooked generator pipeline emits exactly the same records with telemetry on as off', async () => {
    const off = { sft: await generate('sft'), rollouts: await generate('rollouts') };
    running = await startInMemoryTelemetry({ stageSpans: true });
    expect(await generate('sft')).toEqual(off.sft);
    expect(await generate('rollouts')).toEqual(off.rollouts);
  });
});

describe('telemetry on (in-memory exporters)', () => {
  it('puts every stage span of an episode under its episode span, one trace per episode', async () => {
    running = await startInMemoryTelemetry({ stageSpans: true });
    const out = await lastValueFrom(instrumentedRollouts().pipe(toArray()));
    await running.telemetry.flush();
    const spans = await running.finished();
    const episodesSeen = spans.filter((s) => s.name === 'episode');
    expect(episodesSeen).toHaveLength(config.groups * config.groupSize * config.batches);
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    for (const span of spans.filter((s) => s.name !== 'episode')) {
      const parent = byId.get(span.parentSpanContext?.spanId ?? '');
      expect(parent?.name, `${span.name} has an episode parent`).toBe('episode');
      expect(span.spanContext().traceId).toBe(parent!.spanContext().traceId);
    }
    const trajectories = out.filter((o) => o.topic === 'trajectories');
    for (const t of trajectories) {
      const episode = episodesSeen.find((s) => s.attributes['spa.trajectory_id'] === t.key)!;
      // One `turn N` event per turn on the episode span, in order, each with its duration.
      expect(episode.events.map((e) => e.name)).toEqual(t.record.turns.map((_, i) => `turn ${i + 1}`));
      for (const event of episode.events)
        expect(event.attributes?.['spa.turn.duration_ms']).toBeGreaterThanOrEqual(0);
      expect(episode.attributes['spa.env_steps']).toBe(t.record.num_actions);
      // The record that goes to Kafka is stamped with its own episode's trace.
      expect(outboundTraceparent(t)).toMatch(new RegExp(`^00-${episode.spanContext().traceId}-`));
    }
    const stageNames = new Set(spans.filter((s) => s.name.startsWith('stage ')).map((s) => s.name));
    expect(stageNames).toEqual(new Set(['stage toTrajectory', 'stage toRollout']));
  });

  it('by default records one span per sampled episode (turns as events, stages as metrics only)', async () => {
    running = await startInMemoryTelemetry();
    const out = await generate('sft');
    const spans = await running.finished();
    const trajectories = out.filter((o) => o.topic === 'trajectories');
    expect(spans.map((s) => s.name)).toEqual(trajectories.map(() => 'episode'));
    // Every record of the run is stamped with its own episode's (sampled) trace.
    for (const o of out) {
      const episode = spans.find((s) => s.attributes['spa.trajectory_id'] === episodeKeyOf(o))!;
      expect(outboundTraceparent(o)).toMatch(new RegExp(`^00-${episode.spanContext().traceId}-.*-01$`));
    }
  });

  it('samples episodes at the configured ratio (each episode is drawn once, whole)', async () => {
    running = await startInMemoryTelemetry({ sampleRatio: 0.5 });
    const big = episodeConfig({ env: 'sokoban', groups: 8, groupSize: 8, batches: 4, mode: 'base' });
    const out = await lastValueFrom(
      generatorPipeline(big, makeEnv, policy(), { target: 'rollouts', now }).pipe(toArray()),
    );
    const episodes = (await running.finished()).filter((s) => s.name === 'episode');
    const trajectories = out.filter((o) => o.topic === 'trajectories');
    // 256 draws at p = 0.5: outside 96..160 has probability < 1e-4.
    expect(episodes.length).toBeGreaterThan(96);
    expect(episodes.length).toBeLessThan(160);
    const sampled = new Set(episodes.map((s) => s.attributes['spa.trajectory_id']));
    for (const t of trajectories)
      expect(outboundTraceparent(t)!.endsWith('-01')).toBe(sampled.has(t.record.trajectory_id));
  });

  it('an episode stream that errors or is unsubscribed ends its open episodes as failed and passes the error on', async () => {
    running = await startInMemoryTelemetry({ stageSpans: true });
    const steps = await lastValueFrom(episodes(config, makeEnv, policy()).pipe(toArray()));
    const first = steps[0]!;
    const broken = concat(
      of(first),
      throwError(() => new Error('env crashed')),
    );
    await expect(
      lastValueFrom(
        broken.pipe(traceEpisodes(), traceStage('toTrajectory', toTrajectory(now), { timingEvery: 1 })),
      ),
    ).rejects.toThrow('env crashed');
    const second = steps.find((s) => s.trajectoryId !== first.trajectoryId)!;
    const upstream = new Subject<typeof second>();
    const subscription = upstream
      .pipe(traceEpisodes(), traceStage('toTrajectory', toTrajectory(now)))
      .subscribe();
    upstream.next(second);
    subscription.unsubscribe();
    expect(upstream.observed).toBe(false); // the unsubscription reached the source
    const spans = await running.finished();
    const status = (id: string) => spans.find((s) => s.attributes['spa.trajectory_id'] === id)?.status;
    expect(status(first.trajectoryId)).toMatchObject({ code: SpanStatusCode.ERROR, message: 'env crashed' });
    expect(status(second.trajectoryId)?.message).toMatch(/unsubscribed before the episode ended/);
  });

  it('an episode begins with its turn-1 record; a later turn of an episode never begun passes through untraced', async () => {
    running = await startInMemoryTelemetry();
    const steps = await lastValueFrom(episodes(config, makeEnv, policy()).pipe(toArray()));
    const begun = steps.filter((s) => s.trajectoryId === steps[0]!.trajectoryId);
    const orphan = steps.find((s) => s.turn > 1 && s.trajectoryId !== steps[0]!.trajectoryId)!;
    const passed = await lastValueFrom(of(...begun, orphan).pipe(traceEpisodes(), toArray()));
    expect(passed).toEqual([...begun, orphan]);
    const spans = await running.finished();
    expect(spans.map((s) => s.attributes['spa.trajectory_id'])).toEqual([steps[0]!.trajectoryId]);
    // Its turns are events in order, each starting where the previous one ended or later.
    const events = spans[0]!.events;
    expect(events.map((e) => e.name)).toEqual(begun.map((s) => `turn ${s.turn}`));
    const ms = (t: readonly [number, number]) => t[0] * 1e3 + t[1] / 1e6;
    expect(ms(events[0]!.time)).toBeGreaterThanOrEqual(ms(spans[0]!.startTime));
    expect(episodeTraces.get(orphan.trajectoryId)).toBeUndefined();
  });

  it('traces no more episodes than the per-second cap allows, whatever the ratio', async () => {
    running = await startInMemoryTelemetry({ sampleRatio: 1, maxTracesPerSecond: 0.5 });
    const out = await generate('rollouts');
    const traced = (await running.finished()).filter((s) => s.name === 'episode');
    const trajectories = out.filter((o) => o.topic === 'trajectories');
    expect(trajectories.length).toBeGreaterThan(0.5 * TRACE_BURST_SECONDS + 2);
    // The bucket starts with 5 tokens; refilling one takes 2 s, far longer than this run.
    expect(traced).toHaveLength(0.5 * TRACE_BURST_SECONDS);
    const sampled = trajectories.filter((t) => outboundTraceparent(t)!.endsWith('-01'));
    expect(sampled).toHaveLength(traced.length);
  });

  it('counts spa_* metrics from the records themselves, with units', async () => {
    running = await startInMemoryTelemetry();
    const out = await lastValueFrom(instrumentedRollouts().pipe(toArray()));
    const trajectories = out.flatMap((o) => (o.topic === 'trajectories' ? [o.record] : []));
    const sum = (points: { value: unknown }[]) => points.reduce((acc, p) => acc + Number(p.value), 0);
    expect(sum(await running.points('spa_trajectories_total'))).toBe(trajectories.length);
    expect(sum(await running.points('spa_env_steps_total'))).toBe(
      trajectories.reduce((a, t) => a + t.num_actions, 0),
    );
    expect(await running.points('spa_records_total')).toEqual(
      expect.arrayContaining([
        { attributes: { topic: 'rollouts' }, value: out.filter((o) => o.topic === 'rollouts').length },
      ]),
    );
    expect(await running.unit('spa_env_steps_total')).toBe('{step}');
    // Every element of toTrajectory is timed; one in four of toRollout (timingEvery).
    const counts = Object.fromEntries(
      (await running.points('spa_stage_seconds')).map((p) => [
        p.attributes['stage'],
        (p.value as { count: number }).count,
      ]),
    );
    expect(counts).toEqual({
      toTrajectory: trajectories.length,
      toRollout: Math.floor(trajectories.length / 4),
    });
  });

  it('samples whole episodes: ratio 0 records no span but still counts metrics', async () => {
    running = await startInMemoryTelemetry({ sampleRatio: 0 });
    const out = await lastValueFrom(instrumentedRollouts().pipe(toArray()));
    expect(await running.finished()).toEqual([]);
    // Unsampled episodes still propagate a traceparent (flags 00) so a consumer can correlate.
    const first = out.find((o) => o.topic === 'trajectories')!;
    expect(outboundTraceparent(first)).toMatch(/-00$/);
    expect((await running.points('spa_trajectories_total')).length).toBeGreaterThan(0);
  });

  it('metrics only (no span processor): every record carries an unsampled traceparent', async () => {
    running = await startInMemoryTelemetry({ spanProcessors: [], sampleRatio: 1 });
    const out = await generate('sft');
    expect(out.length).toBeGreaterThan(0);
    for (const o of out) expect(outboundTraceparent(o)).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    expect((await running.points('spa_trajectories_total')).length).toBeGreaterThan(0);
  });

  it('reports consumer lag from the lag table at each collection, and staleness in versions', async () => {
    running = await startInMemoryTelemetry();
    const table = new ConsumerLagTable();
    const unregister = spaMetrics().observeConsumerLag(table.read);
    table.update('spa.rollouts', 2, 120n, 103n);
    expect(await running.points('spa_consumer_lag')).toEqual([
      { attributes: { topic: 'spa.rollouts', partition: 2 }, value: 17 },
    ]);
    table.update('spa.rollouts', 2, 120n, 120n);
    expect((await running.points('spa_consumer_lag'))[0]!.value).toBe(0);
    unregister();
    spaMetrics().recordStaleness(7, 5);
    spaMetrics().recordStaleness(7, 9); // a record from a newer policy is not negatively stale
    const [staleness] = await running.points('spa_policy_staleness');
    expect(staleness!.value).toMatchObject({ count: 2, sum: 2, min: 0, max: 2 });
  });

  it('refuses a second start and restores the no-op API on shutdown', async () => {
    running = await startInMemoryTelemetry();
    await expect(startTelemetry({ serviceName: 'again', enabled: true })).rejects.toThrow(/already running/);
    await running.telemetry.shutdown();
    running = undefined;
    expect(telemetryActive()).toBe(false);
    expect(trace.getTracer('x').startSpan('s').isRecording()).toBe(false);
    expect(metrics.getMeterProvider().constructor.name).toMatch(/Noop/);
  });
});
