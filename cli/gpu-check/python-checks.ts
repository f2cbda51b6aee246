/**
 * The GPU check's Python side: `python -m spa_trainer.experiments.gpu_check <command>` in the trainer
 * venv (torch's view of the machine, and the trainer, export and torchrun checks), one JSON row a line.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { GpuRow } from './rows.js';

const trainer = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'trainer');
/** Where scripts/setup-python.mjs puts the trainer's interpreter. */
export const trainerPython = join(trainer, '.venv', 'bin', 'python');
const MODULE = 'spa_trainer.experiments.gpu_check';

/** What torch sees (`gpu_check probe`). */
export interface TorchProbe {
  readonly cuda: boolean;
  readonly devices: number;
  readonly names: readonly string[];
  readonly torch: string;
  /** The CUDA version torch was built for; null for a CPU build. */
  readonly torch_cuda: string | null;
  readonly bf16: boolean;
}

/** Runs the module with `args`; resolves with its stdout lines, rejects with its stderr's tail. */
function runModule(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  onLine: (line: string) => void,
): Promise<void> {
  if (!existsSync(trainerPython))
    return Promise.reject(
      new Error(`no trainer venv at ${trainerPython}: run node scripts/setup.mjs python`),
    );
  return new Promise((resolve, reject) => {
    const child = spawn(trainerPython, ['-m', MODULE, ...args], {
      cwd: trainer,
      env: { ...process.env, PYTHONUNBUFFERED: '1', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
    createInterface({ input: child.stdout }).on('line', onLine);
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve()
        : reject(
            new Error(
              `python -m ${MODULE} ${args.join(' ')} exited ${code}: ${stderr.trim().split('\n').at(-1)}`,
            ),
          ),
    );
  });
}

/** torch's view of this machine. */
export async function probeTorch(): Promise<TorchProbe> {
  let probe: TorchProbe | undefined;
  await runModule(['probe'], {}, (line) => (probe = JSON.parse(line) as TorchProbe));
  if (!probe) throw new Error(`python -m ${MODULE} probe printed nothing`);
  return probe;
}

/**
 * `gpu_check <command> --device <device> …`, each row passed to `onRow` as it comes. With
 * `--device cpu` the GPUs are hidden from it, as `spa run --device cpu` hides them from the trainer.
 */
export async function pythonCheck(
  command: 'trainer' | 'export' | 'torchrun',
  device: 'cpu' | 'cuda',
  args: readonly string[],
  onRow: (row: GpuRow) => void,
): Promise<void> {
  const env = device === 'cpu' ? { CUDA_VISIBLE_DEVICES: '' } : {};
  await runModule([command, '--device', device, ...args], env, (line) => {
    if (line.startsWith('{')) onRow(JSON.parse(line) as GpuRow);
  });
}
