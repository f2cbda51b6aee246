import { spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnTied } from './lifeline.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The trainer venv's Python, provisioned on demand (idempotent, fast when up to date). */
export function trainerPython(): string {
  const setup = spawnSync('node', [join(root, 'scripts', 'setup-python.mjs')], { stdio: 'inherit' });
  if (setup.status !== 0)
    throw new Error('scripts/setup-python.mjs failed: the trainer venv is not usable (see above)');
  return join(root, 'trainer', '.venv', 'bin', 'python');
}

/** The trainer picks CUDA whenever it sees a GPU; `--device cpu` hides GPUs from it. */
export function trainerDeviceEnv(device: 'cpu' | 'cuda'): NodeJS.ProcessEnv {
  return device === 'cpu' ? { CUDA_VISIBLE_DEVICES: '' } : {};
}

/** A running trainer module; `done` settles with its exit (rejects on a non-zero exit). */
export interface TrainerProcess {
  readonly done: Promise<void>;
  kill(): void;
}

/** The trainer's module that runs another tied to its parent (trainer/spa_trainer/lifeline.py). */
const LIFELINE = ['-m', 'spa_trainer.lifeline'];

/**
 * The Python arguments that run `module`: `-m spa_trainer.lifeline <module> …args` (the module, tied
 * to this process: lifeline.ts), or with `procs` > 1 the same under torchrun (`-m
 * torch.distributed.run --standalone --nproc_per_node <procs>`, itself tied), one data-parallel
 * rank per process (trainer/README.md, "Data-parallel training"), each rank tied to torchrun.
 */
export function trainerArgs(module: string, args: readonly string[], procs = 1): string[] {
  const torchrun = ['torch.distributed.run', '--standalone', '--nproc_per_node', String(procs)];
  return [...(procs > 1 ? [...LIFELINE, ...torchrun] : []), ...LIFELINE, module, ...args];
}

/**
 * Runs `python -m <module> …args` from trainer/ (under torchrun on `procs` ranks when above 1),
 * echoing each output line with a `[label]` prefix (so the trainer's progress interleaves readably
 * with the generator's). Results are read from the files the trainer leaves in its `--out` folder
 * (`trainer-files.ts`), not from these lines.
 */
export function runTrainerModule(
  python: string,
  module: string,
  args: readonly string[],
  options: { label: string; env?: NodeJS.ProcessEnv; procs?: number },
): TrainerProcess {
  const child = spawnTied(python, trainerArgs(module, args, options.procs), {
    cwd: join(root, 'trainer'),
    env: { PYTHONUNBUFFERED: '1', ...options.env },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  // The output is echoed as it comes: a failure names only its last line (a traceback's error).
  let last = '';
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      if (line.trim() !== '') last = line.trim();
      // The trainer prefixes its own lines (`[sft] …`); add the label only where it differs.
      const prefix = `[${options.label}]`;
      process.stderr.write(line.startsWith(prefix) ? `${line}\n` : `${prefix} ${line}\n`);
    });
  }
  const done = new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    // `close`, not `exit`: the output's last lines have been read by then
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else
        reject(
          new Error(
            `python -m ${module} exited with ${signal ?? `code ${code}`}: ${last} (its output is above)`,
          ),
        );
    });
  });
  return { done, kill: () => child.kill('SIGTERM') };
}
