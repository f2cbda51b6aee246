/**
 * `npm run gpu-check -- --device cpu`: the GPU check's CPU equivalents at the smallest size, so the
 * script itself runs in CI (docs/gpu.md): the trainer's SFT and PPO steps of tiny-local against
 * themselves, export and its parity, onnxruntime-node decoding the export (CPU provider against CPU
 * provider) and torchrun with gloo, 2 ranks against 1. `spa run` is gpu-check-run.slow.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { GpuRow } from '../../cli/gpu-check/rows.js';
import { runSpa } from './spa-process.js';

describe('spa doctor --gpu --device cpu', () => {
  it('runs every check but spa run on CPU and passes, with figures', async () => {
    const args = ['doctor', '--gpu', '--json', '--device', 'cpu', '--models', 'tiny-local', '--tokens', '24'];
    const result = await runSpa([...args, '--checks', 'trainer,export,onnxruntime,torchrun'], []);
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const rows = JSON.parse(result.stdout) as GpuRow[];
    expect(rows.map((r) => [r.check, r.device, r.result])).toEqual([
      ['trainer sft tiny-local', 'cpu', 'pass'],
      ['trainer ppo tiny-local', 'cpu', 'pass'],
      ['export tiny-local', 'cpu', 'pass'],
      ['onnxruntime tiny-local', 'cpu', 'pass'],
      ['torchrun 2 ranks', 'cpu', 'pass'],
    ]);
    const figures = Object.fromEntries(rows.map((r) => [r.check, r.figures]));
    expect(figures['trainer sft tiny-local']).toMatch(
      /^loss( \d+\.\d{4}){3} \(cpu fp32( \d+\.\d{4}){3}\); .* [\d,]+ tok\/s/,
    );
    expect(figures['trainer ppo tiny-local']).toMatch(
      /^entropy( \d+\.\d{4}){3} \(cpu fp32( \d+\.\d{4}){3}\); .* [\d,]+ tok\/s/,
    );
    expect(figures['export tiny-local']).toMatch(/graph structure ok; parity .*window_decode/);
    expect(figures['onnxruntime tiny-local']).toMatch(
      /greedy 24 tokens × 8 prompts same as cpu; batch 1: \d+ tok\/s .*batch 8: \d+ tok\/s/,
    );
    expect(figures['torchrun 2 ranks']).toMatch(/^gloo; loss 1 rank (\d+\.\d{4} ?){2}, 2 ranks/);
  }, 300_000);
});
