/**
 * The real generator (`spa generate --out kafka`, a subprocess) against a broker that is
 * SIGKILLed mid-run and restarted: spa.trajectories (read_committed) must hold every expected
 * trajectory id exactly once — transactions plus the idempotent producer, end to end.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killBroker, startBroker } from '../../infra/kafka/broker.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import { spaTopics } from '../../schemas/topics.js';
import { kafkajsTransport } from '../../streams/kafka/kafkajs-adapter.js';
import type { KafkaTransport } from '../../streams/kafka/transport.js';
import { eventually, startTestBroker, stopTestBroker, testConnection } from './harness.js';
import { readAllRecords } from './read-records.js';

const ports = { port: 19410, controllerPort: 19411 };
const instance = { ...ports, name: 'test-gencrash' };
const run = { runId: 'crash-run', groups: 16, groupSize: 8, batches: 5 };
const total = run.groups * run.groupSize * run.batches;
let brokers: readonly string[];
let transport: KafkaTransport;

beforeAll(async () => {
  brokers = (await startTestBroker('gencrash', ports)).brokers;
  await applyTopicsTo(brokers, spaTopics());
  transport = kafkajsTransport(testConnection(brokers));
});

afterAll(async () => {
  await transport?.close();
  await stopTestBroker('gencrash', ports);
});

/** Runs `spa generate` as a subprocess; `progress` sees the trajectories count of each progress line. */
function generate(
  progress: (trajectories: number) => void,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const args = ['bin/spa.mjs', 'generate', '--env', 'sokoban', '--policy', 'random', '--out', 'kafka'];
  args.push('--run-id', run.runId, '--groups', String(run.groups), '--group-size', String(run.groupSize));
  args.push('--batches', String(run.batches));
  const child = spawn(process.execPath, args, {
    env: { ...process.env, KAFKA_BROKERS: brokers.join(',') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    const counts = [...chunk.toString().matchAll(/trajectories (\d+)\//g)].map((m) => Number(m[1]));
    if (counts.length > 0) progress(Math.max(...counts));
  });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
}

function expectedIds(): string[] {
  const ids: string[] = [];
  for (let b = 0; b < run.batches; b++)
    for (let g = 0; g < run.groups; g++)
      for (let m = 0; m < run.groupSize; m++) ids.push(`${run.runId}/train/b${b}/g${g}/m${m}`);
  return ids;
}

describe('spa generate --out kafka across a kill -9 of the broker', () => {
  it('commits every trajectory exactly once after the broker is SIGKILLed mid-run and restarted', async () => {
    let produced = 0;
    const generation = generate((n) => (produced = n));
    await eventually(() => produced >= total / 5, 120_000, `${total / 5} trajectories generated`);
    await killBroker(instance);
    const killedAt = produced;
    await new Promise((resolve) => setTimeout(resolve, 2000)); // let the generator hit the dead broker
    const killedTime = Date.now();
    await startBroker({ ...instance, startTimeoutMs: 180_000, log: () => {} });
    const downMs = Date.now() - killedTime;
    const result = await generation;
    console.info(
      `[generator-crash] killed after ${killedAt}/${total} trajectories were generated; broker down ${downMs} ms; generator finished ${Date.now() - killedTime} ms after the kill`,
    );
    expect(result.code, result.stderr.slice(-2000)).toBe(0);
    expect(killedAt).toBeLessThan(total); // the kill really happened mid-run
    expect(JSON.parse(result.stdout.trim()).counts.trajectories).toBe(total);

    const kafka = { transport, config: testConnection(brokers) };
    const ids = (await readAllRecords(kafka, 'spa.trajectories', 'Trajectory', total)).map(
      (t) => t.trajectory_id,
    );
    expect(ids).toHaveLength(total);
    expect(new Set(ids).size).toBe(total);
    expect([...ids].sort()).toEqual(expectedIds().sort());
  });
});
