/**
 * `spa doctor --gpu` (`npm run gpu-check`, docs/gpu.md): proves the CUDA path in a few minutes on a
 * machine with a GPU — the trainer in bf16 against fp32 on CPU, export traced on the GPU and its
 * parity, onnxruntime-node's CUDA provider against its CPU provider, torchrun with nccl, and a
 * smallest `spa run --device cuda` — and prints a table with the figures. Without CUDA every check is
 * skipped in one line each (exit 0); `--device cpu` runs the same checks' CPU equivalents (the tests
 * do). First it names what the CUDA path lacks here, each with the command that provides it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cudaProviderFiles } from '../../policies/onnx/provider-check.js';
import { cudaNeeds } from './needs.js';
import { onnxRow } from './onnx-check.js';
import { probeTorch, pythonCheck, trainerPython, type TorchProbe } from './python-checks.js';
import { GPU_CHECKS, formatNeeds, skipped, type GpuCheckName, type GpuRow } from './rows.js';
import { spaRunRow } from './run-check.js';

/** What to run and where. */
export interface GpuCheckOptions {
  readonly device: 'cpu' | 'cuda';
  /** `tiny-local` and/or `25m` (the 24.6 M-parameter model). */
  readonly models: readonly string[];
  readonly checks: readonly GpuCheckName[];
  /** New tokens per row of the onnxruntime-node check. */
  readonly tokens: number;
}

const NO_CUDA = 'no CUDA (torch.cuda.is_available() is False)';

/** Why nothing can run on `device`, or undefined when it can. */
function unavailable(
  device: 'cpu' | 'cuda',
  probe: TorchProbe | undefined,
  probeError: string,
): string | undefined {
  if (!probe) return `the trainer venv does not answer (${probeError})`;
  return device === 'cuda' && !probe.cuda ? NO_CUDA : undefined;
}

/** Runs one check, passing each row to `report` as it is measured. */
async function runCheck(
  check: GpuCheckName,
  options: GpuCheckOptions,
  out: string,
  report: (row: GpuRow) => void,
): Promise<void> {
  const { device, models } = options;
  const list = ['--models', models.join(',')];
  if (check === 'trainer') await pythonCheck('trainer', device, list, report);
  else if (check === 'export')
    await pythonCheck('export', device, [...list, '--out', join(out, 'export')], report);
  else if (check === 'torchrun')
    await pythonCheck('torchrun', device, [...list, '--out', join(out, 'torchrun')], report);
  else if (check === 'run') report(await spaRunRow(device, out));
  else
    for (const model of models) {
      const artifact = join(out, 'export', model, 'artifacts', 'v000001');
      report(await onnxRow(model, artifact, device, { tokens: options.tokens }));
    }
}

/** The check: `print` gets the header lines, `report` each row as it comes; resolves with all rows. */
export async function runGpuCheck(
  options: GpuCheckOptions,
  print: (text: string) => void,
  report: (row: GpuRow) => void,
): Promise<GpuRow[]> {
  const rows: GpuRow[] = [];
  const add = (row: GpuRow) => {
    rows.push(row);
    report(row);
  };
  let probe: TorchProbe | undefined;
  let probeError = '';
  try {
    probe = await probeTorch();
  } catch (error) {
    probeError = (error as Error).message;
  }
  if (probe)
    print(
      `torch ${probe.torch} (CUDA ${probe.torch_cuda ?? 'none'}); GPUs: ${probe.devices ? probe.names.join(', ') : 'none'}${probe.cuda ? `; bf16 ${probe.bf16 ? 'yes' : 'no'}` : ''}`,
    );
  if (options.device === 'cuda') print(formatNeeds(cudaNeeds(probe, cudaProviderFiles(), trainerPython)));
  const why = unavailable(options.device, probe, probeError);
  if (why) {
    for (const check of options.checks) add(skipped(check, options.device, why));
    return rows;
  }
  const out = mkdtempSync(join(tmpdir(), 'spa-gpu-check-'));
  try {
    for (const check of GPU_CHECKS.filter((c) => options.checks.includes(c))) {
      if (check === 'onnxruntime' && !options.checks.includes('export'))
        add(
          skipped(
            check,
            options.device,
            "decodes the export check's artifacts: run it with --checks export,onnxruntime",
          ),
        );
      else
        await runCheck(check, options, out, add).catch((error: Error) =>
          add({
            check,
            device: options.device,
            result: 'fail',
            figures: 'did not finish',
            detail: error.message,
          }),
        );
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
  return rows;
}
