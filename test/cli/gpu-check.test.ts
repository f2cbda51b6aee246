/**
 * `npm run gpu-check` (`spa doctor --gpu`, docs/gpu.md) without CUDA: every check skipped in one line,
 * exit 0, and what the CUDA path lacks named with its command; the table and the needs in isolation.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { providerLibraries } from '../../cli/gpu-check/needs.js';
import { formatGpuTable, GPU_CHECKS } from '../../cli/gpu-check/rows.js';
import { runSpa } from './spa-process.js';

describe('spa doctor --gpu on a machine without CUDA', () => {
  it('skips every check in one line each, names what the CUDA path lacks, and exits 0', async () => {
    // No GPU is visible to torch, on any machine (this one has none anyway).
    const result = await runSpa(['doctor', '--gpu'], [], { CUDA_VISIBLE_DEVICES: '' });
    expect(result.code, result.stderr).toBe(0);
    const skippedLines = result.stdout
      .split('\n')
      .filter((line) =>
        / cuda +skipped +skipped: no CUDA \(torch\.cuda\.is_available\(\) is False\)$/.test(line),
      );
    expect(skippedLines.map((line) => line.split(/  +/)[0])).toEqual([
      'trainer',
      'export',
      'onnxruntime',
      'torchrun 2 ranks',
      'spa run',
    ]);
    expect(result.stdout).toContain('no check failed (5 skipped)');
    // onnxruntime-node was installed with its CUDA files skipped (scripts/setup.mjs)
    expect(result.stdout).toContain("onnxruntime-node's CUDA provider files");
    expect(result.stdout).toContain('ONNXRUNTIME_NODE_INSTALL=cuda12 node script/install.js');
  }, 300_000); // the probe imports torch: a minute on a busy 2-core box

  it('refuses a bad --checks value in one line, exit 2', async () => {
    const result = await runSpa(['doctor', '--gpu', '--checks', 'trainer,warp'], []);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      '--checks must be a comma-separated list of trainer, export, onnxruntime, torchrun, run',
    );
  });
});

describe('the GPU check table', () => {
  it('aligns check, device, result and figures, with a failure’s detail under it', () => {
    const text = formatGpuTable([
      { check: 'trainer sft tiny-local', device: 'cuda', result: 'pass', figures: 'loss 7.3' },
      { check: 'spa run', device: 'cuda', result: 'fail', figures: 'exit 1', detail: 'broker down' },
    ]);
    expect(text.split('\n')).toEqual([
      'check                   device  result  figures',
      'trainer sft tiny-local  cuda    pass    loss 7.3',
      'spa run                 cuda    fail    exit 1',
      '                                        → broker down',
    ]);
    expect(GPU_CHECKS).toHaveLength(5);
  });
});

describe("onnxruntime-node's CUDA libraries", () => {
  it('says to put the venv’s NVIDIA wheels on LD_LIBRARY_PATH, or to install them when they are nowhere', () => {
    const root = mkdtempSync(join(tmpdir(), 'spa-needs-'));
    try {
      const lib = join(root, 'lib', 'python3.11', 'site-packages', 'nvidia', 'cudnn', 'lib');
      mkdirSync(lib, { recursive: true });
      writeFileSync(join(lib, 'libcudnn.so.9'), '');
      const python = join(root, 'bin', 'python');
      const needs = providerLibraries(python, new Set(['libcudart.so.12', 'libcublasLt.so.12']));
      expect(needs).toHaveLength(2);
      expect(needs[0]!.what).toMatch(/^libcudnn\.so\.9 only in the trainer venv/);
      expect(needs[0]!.fix).toBe(`export LD_LIBRARY_PATH=${lib}:$LD_LIBRARY_PATH`);
      expect(needs[1]!.what).toMatch(/^libcufft\.so\.11 \(CUDA 12, cuDNN 9\)/);
      expect(needs[1]!.fix).toContain('pip install nvidia-cuda-runtime-cu12');
      const all = new Set(['libcudart.so.12', 'libcublasLt.so.12', 'libcudnn.so.9', 'libcufft.so.11']);
      expect(providerLibraries(python, all)).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
