import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { tracedSink } from '../../streams/kafka/kafka-spans.js';
import { episodeTraces, startEpisodeSpan } from '../../streams/telemetry/episode-spans.js';
import { spaMetrics } from '../../streams/telemetry/metrics.js';
import { spaTracer, startTelemetry, type Telemetry } from '../../streams/telemetry/telemetry.js';
import { startOtlpReceiver, type OtlpReceiver } from './harness.js';

let telemetry: Telemetry | undefined;
let receiver: OtlpReceiver | undefined;
/** The SDK's Prometheus endpoint in the OTEL_METRICS_EXPORTER test: in this helper's port range (19950-19969). */
const PROMETHEUS_PORT = 19951;

afterEach(async () => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
  await telemetry?.shutdown();
  await receiver?.close();
  telemetry = undefined;
  receiver = undefined;
  episodeTraces.clear();
});

describe('Prometheus scrape endpoint', () => {
  it('serves spa_* metrics with units over real HTTP on 127.0.0.1', async () => {
    telemetry = await startTelemetry({ serviceName: 'spa-test', metricsPort: 0 });
    expect(telemetry.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    spaMetrics().envSteps.add(3, { env: 'sokoban' });
    const sokobanSteps = spaMetrics().envSteps.bind({ env: 'sokoban' }); // the same series
    sokobanSteps.add(4);
    expect(() => sokobanSteps.add(-1)).toThrow(/non-negative/);
    spaMetrics().rejects.add(1, { reason: 'no-match', source: 'filterMalformed' });
    spaMetrics().waitForBatch.record(0.2);
    const response = await fetch(telemetry.metricsUrl!);
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain('# UNIT spa_env_steps_total {step}');
    expect(text).toMatch(/^spa_env_steps_total\{env="sokoban",otel_scope_name="spa"\} 7$/m);
    expect(text).toMatch(
      /^spa_rejects_total\{reason="no-match",source="filterMalformed",otel_scope_name="spa"\} 1$/m,
    );
    expect(text).toMatch(/^spa_wait_for_batch_seconds_bucket\{otel_scope_name="spa",le="0.5"\} 1$/m);
    expect(text).toMatch(/^spa_wait_for_batch_seconds_bucket\{otel_scope_name="spa",le="0.1"\} 0$/m);
    expect((await fetch(telemetry.metricsUrl!.replace('/metrics', '/'))).status).toBe(404);
  });

  it('serves every spa_* series the Grafana dashboard queries', async () => {
    telemetry = await startTelemetry({ serviceName: 'spa-test', metricsPort: 0 });
    const m = spaMetrics();
    for (const counter of [
      m.envSteps,
      m.trajectories,
      m.records,
      m.topicBytes,
      m.rejects,
      m.generationTokens,
      m.trainerTokens,
    ])
      counter.add(1);
    for (const histogram of [m.policyStaleness, m.waitForBatch, m.waitForPolicy, m.stageSeconds])
      histogram.record(1);
    const unregister = m.observeConsumerLag(() => [{ topic: 't', partition: 0, lag: 1 }]);
    const served = new Set(
      (await (await fetch(telemetry.metricsUrl!)).text())
        .split('\n')
        .map((line) => /^(spa_\w+)/.exec(line)?.[1]),
    );
    unregister();
    const dashboard = readFileSync('infra/otel/grafana-dashboard.json', 'utf8');
    const queried = new Set(dashboard.match(/spa_\w+/g));
    expect(queried.size).toBeGreaterThan(10);
    for (const name of queried) expect(served, `${name} is served`).toContain(name);
  });

  it('each histogram series of the Grafana dashboard computes what its legend says', () => {
    const dashboard = JSON.parse(readFileSync('infra/otel/grafana-dashboard.json', 'utf8')) as {
      panels: { title: string; targets?: { expr: string; legendFormat: string }[] }[];
    };
    const legends = dashboard.panels.flatMap((panel) =>
      (panel.targets ?? []).map((target) => ({ ...target, title: panel.title })),
    );
    const checked = legends.filter(({ legendFormat }) => /\bp\d\d\b|max|mean/.test(legendFormat));
    expect(checked.length).toBeGreaterThanOrEqual(6);
    for (const { expr, legendFormat, title } of checked) {
      const what = `${title}: ${legendFormat}`;
      const percentile = /\bp(\d\d)\b/.exec(legendFormat)?.[1];
      const quantile = Number(/^histogram_quantile\(([\d.]+),/.exec(expr)?.[1]);
      if (percentile) expect(quantile, what).toBe(Number(percentile) / 100);
      // The highest non-empty bucket's upper bound is quantile 1; a mean is _sum / _count.
      if (/max/.test(legendFormat)) expect(quantile, what).toBe(1);
      if (/mean/.test(legendFormat)) expect(expr, what).toMatch(/_sum\[.*\/.*_count\[/);
    }
    const staleness = dashboard.panels.find((panel) => panel.title.startsWith('Policy staleness'));
    expect(staleness?.targets?.map((t) => t.legendFormat)).toEqual(['p50', 'p95', 'max bucket', 'mean']);
  });

  it('fails to start with a clear message when the port is taken, and frees its port on shutdown', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen({ host: '127.0.0.1', port: 0 }, resolve));
    const port = (blocker.address() as { port: number }).port;
    await expect(startTelemetry({ serviceName: 'spa-test', metricsPort: port })).rejects.toThrow(
      `cannot serve metrics on 127.0.0.1:${port}`,
    );
    await new Promise((resolve) => blocker.close(resolve));
    telemetry = await startTelemetry({ serviceName: 'spa-test', metricsPort: port });
    expect(telemetry.metricsUrl).toBe(`http://127.0.0.1:${port}/metrics`);
    await telemetry.shutdown();
    await expect(fetch(`http://127.0.0.1:${port}/metrics`)).rejects.toThrow();
  });
});

describe('OTLP export, configured by OTEL_EXPORTER_OTLP_*', () => {
  it('delivers episode and Kafka send spans of one trace, and spa_* metrics, to a real receiver', async () => {
    receiver = await startOtlpReceiver();
    vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', receiver.url);
    vi.stubEnv('OTEL_EXPORTER_OTLP_PROTOCOL', 'http/json');
    vi.stubEnv('OTEL_EXPORTER_OTLP_HEADERS', 'x-spa-key=s%3Dcret');
    telemetry = await startTelemetry({ serviceName: 'spa-generator' });
    const episode = startEpisodeSpan({
      trajectoryId: 'r/t/b0/g0/m0',
      groupId: 'r/t/b0/g0',
      env: 'sokoban',
      seed: 9,
    });
    episode.turn(1, () => spaMetrics().envSteps.add(2, { env: 'sokoban' }));
    episode.end({ success: false, turns: 1 });
    const traceparent = episodeTraces.traceparent('r/t/b0/g0/m0')!;
    const sent: Buffer[] = [];
    const sink = tracedSink({
      send: async (records) => (sent.push(records[0]!.headers!['traceparent']!), []),
      oversized: async () => [],
      transaction: () => Promise.reject(new Error('unused')),
      close: async () => {},
    });
    await sink.send([
      {
        topic: 'spa.trajectories',
        key: Buffer.from('k'),
        value: null,
        headers: { traceparent: Buffer.from(traceparent) },
      },
    ]);
    await telemetry.flush();
    await receiver.waitFor((spans) => spans.length >= 2);
    const traceId = traceparent.split('-')[1];
    expect(receiver.spans.map((s) => s.name).sort()).toEqual(['episode', 'send spa.trajectories']);
    // The turn is an event on the episode span (name, start time, spa.turn).
    expect(receiver.spans.find((s) => s.name === 'episode')!.events).toEqual([
      expect.objectContaining({ name: 'turn 1', attributes: expect.objectContaining({ 'spa.turn': 1 }) }),
    ]);
    expect(new Set(receiver.spans.map((s) => s.traceId))).toEqual(new Set([traceId]));
    expect(new Set(receiver.spans.map((s) => s.service))).toEqual(new Set(['spa-generator']));
    const send = receiver.spans.find((s) => s.name.startsWith('send'))!;
    expect(sent[0]!.toString()).toBe(`00-${traceId}-${send.spanId}-01`);
    expect(send.attributes['messaging.system.name']).toBe('kafka');
    expect(receiver.metricNames).toContain('spa_env_steps_total');
    expect(new Set(receiver.requests.map((r) => r.headers['x-spa-key']))).toEqual(new Set(['s=cret']));
    expect(new Set(receiver.requests.map((r) => r.path))).toEqual(new Set(['/v1/traces', '/v1/metrics']));
  });

  it("speaks the specification's default protocol, http/protobuf, and --otlp-endpoint stands for the variable", async () => {
    receiver = await startOtlpReceiver();
    telemetry = await startTelemetry({ serviceName: 'spa-generator', otlpEndpoint: receiver.url });
    spaTracer().startSpan('s').end();
    await telemetry.flush().catch(() => {}); // the receiver refuses protobuf (415)
    expect(receiver.requests.map((r) => [r.path, r.headers['content-type']])).toContainEqual([
      '/v1/traces',
      'application/x-protobuf',
    ]);
    expect(process.env['OTEL_EXPORTER_OTLP_ENDPOINT']).toBeUndefined(); // set only while the SDK was built
  });

  it('OTEL_TRACES_EXPORTER=none with an endpoint: metrics only, no episode drawn', async () => {
    receiver = await startOtlpReceiver();
    vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', receiver.url);
    vi.stubEnv('OTEL_EXPORTER_OTLP_PROTOCOL', 'http/json');
    vi.stubEnv('OTEL_TRACES_EXPORTER', 'none');
    telemetry = await startTelemetry({ serviceName: 'spa-generator' });
    expect(startEpisodeSpan({ trajectoryId: 'x', groupId: 'g', env: 'sokoban', seed: 1 }).recording).toBe(
      false,
    );
    spaMetrics().envSteps.add(1, { env: 'sokoban' });
    await telemetry.flush();
    expect(receiver.requests.map((r) => r.path)).toEqual(['/v1/metrics']);
  });

  it('OTEL_METRICS_EXPORTER=none with an endpoint: traces only', async () => {
    receiver = await startOtlpReceiver();
    vi.stubEnv('OTEL_EXPORTER_OTLP_ENDPOINT', receiver.url);
    vi.stubEnv('OTEL_EXPORTER_OTLP_PROTOCOL', 'http/json');
    vi.stubEnv('OTEL_METRICS_EXPORTER', 'none');
    telemetry = await startTelemetry({ serviceName: 'spa-generator' });
    spaMetrics().envSteps.add(1, { env: 'sokoban' });
    startEpisodeSpan({ trajectoryId: 'x', groupId: 'g', env: 'sokoban', seed: 1 }).end({ success: true });
    await telemetry.flush();
    expect(receiver.requests.map((r) => r.path)).toEqual(['/v1/traces']);
  });
});

describe('console exporters', () => {
  it('OTEL_TRACES_EXPORTER=console prints each span as it ends; OTEL_METRICS_EXPORTER=console the metrics', async () => {
    vi.stubEnv('OTEL_TRACES_EXPORTER', 'console');
    vi.stubEnv('OTEL_METRICS_EXPORTER', 'console');
    const printed: unknown[] = [];
    vi.spyOn(console, 'dir').mockImplementation((value: unknown) => void printed.push(value));
    telemetry = await startTelemetry({ serviceName: 'spa-generator' });
    const episode = startEpisodeSpan({ trajectoryId: 'r/t/b0/g0/m0', groupId: 'g', env: 'sokoban', seed: 1 });
    episode.end({ success: true, turns: 0 });
    await telemetry.flush(); // the span waits for the resource's asynchronous attributes (host.id)
    expect(printed).toEqual([expect.objectContaining({ name: 'episode' })]);
    spaMetrics().envSteps.add(2, { env: 'sokoban' });
    await telemetry.flush();
    expect(printed.slice(1)).toContainEqual(
      expect.objectContaining({ descriptor: expect.objectContaining({ name: 'spa_env_steps_total' }) }),
    );
  });
});

describe('OTEL_METRICS_EXPORTER=prometheus', () => {
  it("serves spa_* metrics on OTEL_EXPORTER_PROMETHEUS_HOST:_PORT, the SDK's own endpoint", async () => {
    vi.stubEnv('OTEL_METRICS_EXPORTER', 'prometheus');
    vi.stubEnv('OTEL_EXPORTER_PROMETHEUS_HOST', '127.0.0.1');
    vi.stubEnv('OTEL_EXPORTER_PROMETHEUS_PORT', String(PROMETHEUS_PORT));
    telemetry = await startTelemetry({ serviceName: 'spa-generator' });
    expect(telemetry.metricsUrl).toBeUndefined(); // not SPA's --metrics-port endpoint
    spaMetrics().records.add(5, { topic: 'sft' });
    const text = await (await fetch(`http://127.0.0.1:${PROMETHEUS_PORT}/metrics`)).text();
    expect(text).toMatch(/^spa_records_total\{[^}]*topic="sft"[^}]*\} 5$/m);
    expect(text).toMatch(/^target_info\{[^}]*service_name="spa-generator"/m);
  });
});
