/**
 * One trace from an env step into the trainer step (infra/otel/README.md), end to end: instrumented
 * episodes → records stamped with `traceparent` → real Kafka broker → traced consumer → the
 * Python trainer's tracer (trainer/spa_trainer/otlp.py) continuing from the consumed
 * headers → one OTLP/HTTP receiver that sees TS and Python spans with the same trace ids.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';
import { lastValueFrom, map, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { envFactory } from '../../envs/registry.js';
import { waitForLeaders } from '../../infra/kafka/topics.js';
import { toTrajectory } from '../../operators/to-trajectory.js';
import type { Outbound } from '../../schemas/outbound.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { episodes } from '../../streams/episodes/episodes.js';
import { decodeSpaHeaders, encodeSpaHeaders } from '../../streams/kafka/headers.js';
import { tracedBatchHandler, tracedSink } from '../../streams/kafka/kafka-spans.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import type { ConsumedRecord, KafkaTransport } from '../../infra/kafka/client/transport.js';
import { builtinPolicy } from '../../policies/builtin.js';
import { outboundTraceparent } from '../../streams/telemetry/episode-key.js';
import { meterOutbound } from '../../streams/telemetry/meter-outbound.js';
import { startTelemetry, type Telemetry } from '../../streams/telemetry/telemetry.js';
import { traceEpisodes } from '../../streams/telemetry/trace-episodes.js';
import { traceStage } from '../../streams/telemetry/trace-stage.js';
import { eventually, startTestBroker, stopTestBroker, testConnection } from '../kafka/harness.js';
import { startOtlpReceiver, type OtlpReceiver } from './harness.js';

const run = promisify(execFile);
const ports = { port: 19392, controllerPort: 19393 };
const python = existsSync('trainer/.venv/bin/python') ? 'trainer/.venv/bin/python' : 'python3';

let brokers: readonly string[];
let receiver: OtlpReceiver;
let telemetry: Telemetry;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  vi.stubEnv('OTEL_EXPORTER_OTLP_PROTOCOL', 'http/json'); // the receiver reads OTLP/JSON
  telemetry = await startTelemetry({
    serviceName: 'spa-generator',
    otlpEndpoint: receiver.url,
    sampleRatio: 1,
  });
  brokers = (await startTestBroker('otel', ports)).brokers;
}, 240_000);

afterAll(async () => {
  await telemetry?.shutdown();
  vi.unstubAllEnvs();
  await receiver?.close();
  await stopTestBroker('otel', ports);
});

async function generate(): Promise<Extract<Outbound, { topic: 'trajectories' }>[]> {
  const config = episodeConfig({
    env: 'frozenlake',
    groups: 2,
    groupSize: 2,
    batches: 1,
    mode: 'base',
    runId: 'otel',
  });
  const policy = builtinPolicy('random', { mode: 'base', seed: 1 });
  return lastValueFrom(
    episodes(config, envFactory({ name: 'frozenlake', puzzles: 'generated' }), policy).pipe(
      traceEpisodes(),
      traceStage('toTrajectory', toTrajectory()),
      map((t) => ({ topic: 'trajectories' as const, key: t.trajectory_id, record: t })),
      meterOutbound(),
      toArray(),
    ),
  );
}

// One broker, telemetry and receiver; each case looks only at the spans received since it began.
describe('one trace from the generator through Kafka into the trainer', () => {
  const topic = 'otel.trajectories';
  let transport: KafkaTransport;

  beforeAll(async () => {
    transport = kafkaTransport(testConnection(brokers));
    const admin = await transport.admin();
    await admin.createTopics([{ name: topic, partitions: 2, replicationFactor: 1, configs: {} }]);
    await waitForLeaders(admin, [topic]);
    await admin.close();
  });

  afterAll(async () => {
    await transport?.close();
  });

  it('carries traceparent on Kafka records and the Python trainer spans share the generator trace ids', async () => {
    const earlier = receiver.spans.length;
    const received = () => receiver.spans.slice(earlier);
    const outbound = await generate();
    const sink = tracedSink(await transport.sink());
    await sink.send(
      outbound.map((o) => ({
        topic,
        key: Buffer.from(o.key),
        value: Buffer.from(JSON.stringify({ id: o.key })),
        headers: encodeSpaHeaders({
          traceparent: outboundTraceparent(o)!,
          policyVersion: o.record.policy_version,
        }),
      })),
    );
    const consumed: ConsumedRecord[] = [];
    const source = await transport.source({
      groupId: 'otel-trainer',
      topics: [topic],
      start: { kind: 'earliest' },
    });
    await source.run(
      tracedBatchHandler(async (batch) => void consumed.push(...batch.records), {
        groupId: 'otel-trainer',
      }),
    );
    await eventually(
      () => consumed.length >= outbound.length,
      60_000,
      `${outbound.length} records from ${topic}`,
    );
    await source.close();

    // Records on Kafka carry traceparent (validated by the Kafka layer's own header codec).
    const traceparents = consumed.map((r) => decodeSpaHeaders(r.headers).traceparent!);
    expect(traceparents.every((tp) => /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/.test(tp))).toBe(true);

    const args = ['-m', 'spa_trainer.otlp', '--endpoint', receiver.url, '--topic', topic, '--step', '7'];
    const { stdout } = await run(python, [...args, ...traceparents.flatMap((tp) => ['--traceparent', tp])], {
      env: { ...process.env, PYTHONPATH: 'trainer' },
    });
    const step = JSON.parse(stdout) as { trace_id: string; span_id: string; exported: number };
    expect(step.exported).toBe(consumed.length + 1);

    await telemetry.flush();
    await receiver.waitFor(
      (spans) => spans.slice(earlier).filter((s) => s.service === 'spa-trainer').length === step.exported,
    );
    const generatorSpans = received().filter((s) => s.service === 'spa-generator');
    const trainerSpans = received().filter((s) => s.service === 'spa-trainer');
    const episodeTraceIds = new Set(generatorSpans.filter((s) => s.name === 'episode').map((s) => s.traceId));
    expect(episodeTraceIds.size).toBe(outbound.length);
    // The step span lives in a generator trace and links every consumed record.
    const stepSpan = trainerSpans.find((s) => s.name === 'train step 7')!;
    expect(episodeTraceIds).toContain(stepSpan.traceId);
    expect(stepSpan.links.map((l) => l.traceId).sort()).toEqual([...episodeTraceIds].sort());
    // Every episode's trace reaches the trainer: a trainer process span whose parent is the TS send span.
    const sends = new Map(generatorSpans.filter((s) => s.name === `send ${topic}`).map((s) => [s.spanId, s]));
    const processes = trainerSpans.filter((s) => s.name === `process ${topic}`);
    expect(new Set(processes.map((s) => s.traceId))).toEqual(episodeTraceIds);
    for (const span of processes) expect(sends.get(span.parentSpanId)?.traceId).toBe(span.traceId);
    // The TS consumer's process spans are in the same traces too.
    const tsProcesses = generatorSpans.filter((s) => s.name === `process ${topic}`);
    expect(new Set(tsProcesses.map((s) => s.traceId))).toEqual(episodeTraceIds);
  }, 120_000);
});
