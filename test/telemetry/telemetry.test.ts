import { metrics, trace } from '@opentelemetry/api';
import { lastValueFrom, map, merge, share, toArray } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { envFactory } from '../../envs/registry.js';
import { meterOutbound } from '../../operators/meter-outbound.js';
import { traceEpisodes } from '../../operators/trace-episodes.js';
import { traceStage } from '../../operators/trace-stage.js';
import { toRollout } from '../../operators/to-rollout.js';
import { toTrajectory } from '../../operators/to-trajectory.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { episodes } from '../../streams/episodes/episodes.js';
import { generatorPipeline } from '../../streams/generator-pipeline.js';
import type { Outbound } from '../../streams/outbound.js';
import { builtinPolicy } from '../../streams/policies/builtin.js';
import { episodeTraces } from '../../streams/telemetry/episode-spans.js';
import { outboundTraceparent } from '../../streams/telemetry/episode-key.js';
import { ConsumerLagTable, spaMetrics } from '../../streams/telemetry/metrics.js';
import {
  resolveTelemetryOptions,
  startTelemetry,
  telemetryActive,
} from '../../streams/telemetry/telemetry.js';
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
  it('is off unless something is configured, and options win over env', () => {
    expect(resolveTelemetryOptions({ serviceName: 's', env: {} }).enabled).toBe(false);
    const fromEnv = resolveTelemetryOptions({
      serviceName: 's',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318/', SPA_METRICS_PORT: '9464' },
    });
    expect(fromEnv).toEqual({
      enabled: true,
      otlpEndpoint: 'http://127.0.0.1:4318',
      metricsPort: 9464,
      sampleRatio: 1,
    });
    const options = resolveTelemetryOptions({
      serviceName: 's',
      metricsPort: 0,
      sampleRatio: 0.25,
      env: { SPA_METRICS_PORT: '9464', SPA_TRACE_SAMPLE_RATIO: '1' },
    });
    expect(options).toMatchObject({ metricsPort: 0, sampleRatio: 0.25 });
  });

  it('names the bad input', () => {
    const bad = (env: Record<string, string>) => () => resolveTelemetryOptions({ serviceName: 's', env });
    expect(bad({ SPA_METRICS_PORT: '70000' })).toThrow(/metrics port "70000"/);
    expect(bad({ SPA_TRACE_SAMPLE_RATIO: '2' })).toThrow(/sample ratio "2"/);
    expect(bad({ OTEL_EXPORTER_OTLP_ENDPOINT: 'localhost:4318' })).toThrow(/must be an http/);
  });
});

describe('telemetry off', () => {
  it('uses the no-op API: nothing recorded, operators pass records through unchanged', async () => {
    const telemetry = await startTelemetry({ serviceName: 'spa-test', env: {} });
    expect(telemetry.enabled).toBe(false);
    expect(telemetryActive()).toBe(false);
    expect(trace.getTracer('x').startSpan('s').isRecording()).toBe(false);
    const plain = await lastValueFrom(
      generatorPipeline(config, makeEnv, policy(), { target: 'rollouts', now }).pipe(toArray()),
    );
    const hooked = await lastValueFrom(instrumentedRollouts().pipe(toArray()));
    expect(hooked).toEqual(plain);
    expect(episodeTraces.size).toBe(0);
    await telemetry.shutdown();
  });
});

describe('telemetry on (in-memory exporters)', () => {
  it('puts every stage span of an episode under its episode span, one trace per episode', async () => {
    running = await startInMemoryTelemetry();
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
      const turns = spans.filter(
        (s) => s.parentSpanContext?.spanId === episode.spanContext().spanId && s.name.startsWith('turn '),
      );
      expect(turns).toHaveLength(t.record.turns.length);
      expect(episode.attributes['spa.env_steps']).toBe(t.record.num_actions);
      // The record that goes to Kafka is stamped with its own episode's trace.
      expect(outboundTraceparent(t)).toMatch(new RegExp(`^00-${episode.spanContext().traceId}-`));
    }
    const stageNames = new Set(spans.filter((s) => s.name.startsWith('stage ')).map((s) => s.name));
    expect(stageNames).toEqual(new Set(['stage toTrajectory', 'stage toRollout']));
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
