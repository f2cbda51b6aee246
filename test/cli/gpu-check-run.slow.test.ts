/**
 * The GPU check's `spa run` part on CPU (`spa doctor --gpu --device cpu --checks run`, docs/gpu.md):
 * the whole loop at its smallest size, end to end, on a test broker.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningBroker } from '../../infra/kafka/broker.js';
import type { GpuRow } from '../../cli/gpu-check/rows.js';
import { startTestBroker, stopTestBroker } from '../kafka/harness.js';
import { runSpa } from './spa-process.js';

const ports = { port: 19800, controllerPort: 19801 };
let broker: RunningBroker;

beforeAll(async () => {
  broker = await startTestBroker('gpu-check-run', ports);
});

afterAll(async () => {
  await stopTestBroker('gpu-check-run', ports);
});

describe('spa doctor --gpu --device cpu --checks run', () => {
  it('runs the smallest spa run end to end and reports its evaluation', async () => {
    const args = ['doctor', '--gpu', '--json', '--device', 'cpu', '--checks', 'run'];
    const result = await runSpa(args, broker.brokers);
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const [row, ...rest] = JSON.parse(result.stdout) as GpuRow[];
    expect(rest).toEqual([]);
    expect(row).toMatchObject({ check: 'spa run', device: 'cpu', result: 'pass' });
    // 2 PPO steps of 2 groups × 2 episodes; the final policy is the last export (SFT's v1, then one a step)
    expect(row!.figures).toMatch(
      /^\d+ s end to end; 8 PPO rollouts; final policy onnx:v000003 Pass@1 \d+\.\d \(1 puzzle\)$/,
    );
  }, 900_000);
});
