/**
 * The onnxruntime-node check: each artifact the export check wrote, decoded greedily on the device's
 * execution provider and on the CPU provider: the same tokens for every prompt, and tokens/s at
 * batch 1 and 8 against the CPU's (each the faster of two timed runs after a warm-up).
 */
import { cudaProviderFiles, greedyDecoder, type GreedyDecoder } from '../../policies/onnx/provider-check.js';
import type { GpuRow } from './rows.js';

const BATCHES = [1, 8] as const;

/** How much to decode: rows are SPA prompts, `tokens` new tokens each. */
interface OnnxCheckSizes {
  readonly tokens: number;
}

/** The first position where two id lists differ, or -1. */
function firstDifference(a: readonly number[], b: readonly number[]): number {
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return -1;
}

/** tokens/s of `decoder` at `batch` (best of two after a warm-up) and its ids. */
async function measure(decoder: GreedyDecoder, batch: number) {
  await decoder.run(batch);
  const [a, b] = [await decoder.run(batch), await decoder.run(batch)];
  return a.tokensPerSecond >= b.tokensPerSecond ? a : b;
}

/** One row: the artifact of `model` on `device` against the CPU provider. */
export async function onnxRow(
  model: string,
  artifact: string,
  device: 'cpu' | 'cuda',
  sizes: OnnxCheckSizes,
): Promise<GpuRow> {
  const check = `onnxruntime ${model}`;
  if (device === 'cuda') {
    const files = cudaProviderFiles();
    if (files.missing.length > 0)
      return {
        check,
        device,
        result: 'fail',
        figures: `no CUDA provider files (${files.missing.join(', ')})`,
        detail: files.install,
      };
  }
  const opened: GreedyDecoder[] = [];
  try {
    const onDevice = await greedyDecoder(artifact, device, Math.max(...BATCHES), sizes.tokens);
    opened.push(onDevice);
    const onCpu = await greedyDecoder(artifact, 'cpu', Math.max(...BATCHES), sizes.tokens);
    opened.push(onCpu);
    const parts: string[] = [];
    const differences: string[] = [];
    for (const batch of BATCHES) {
      const [got, want] = [await measure(onDevice, batch), await measure(onCpu, batch)];
      got.ids.forEach((ids, row) => {
        const at = firstDifference(ids, want.ids[row] ?? []);
        if (at >= 0) differences.push(`batch ${batch} prompt ${row}: token ${at}`);
      });
      parts.push(
        `batch ${batch}: ${got.tokensPerSecond.toFixed(0)} tok/s (cpu ${want.tokensPerSecond.toFixed(0)}, ` +
          `${(got.tokensPerSecond / want.tokensPerSecond).toFixed(2)}×)`,
      );
    }
    const same = differences.length === 0;
    const figures = `greedy ${sizes.tokens} tokens × ${Math.max(...BATCHES)} prompts ${same ? 'same as' : 'DIFFER from'} cpu; ${parts.join('; ')}`;
    return same
      ? { check, device, result: 'pass', figures }
      : {
          check,
          device,
          result: 'fail',
          figures,
          detail: `first differences: ${differences.slice(0, 3).join(', ')}`,
        };
  } catch (error) {
    return {
      check,
      device,
      result: 'fail',
      figures: 'the session did not open or run',
      detail: (error as Error).message.split('\n')[0],
    };
  } finally {
    await Promise.all(opened.map((d) => d.release()));
  }
}
