/**
 * Runs Python in the trainer's venv for the benches and the tests that compare against Python:
 * `scripts/setup-python.mjs` first (once per process; a quick stamp check when nothing changed),
 * then the script with the repository's own `trainer/` first on `PYTHONPATH`, so the checkout
 * being measured is the one imported even when the venv's path file names another checkout.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const trainer = join(repo, 'trainer');
const venvPython = join(trainer, '.venv', 'bin', 'python');

let venvReady: Promise<string> | undefined;

/** `node scripts/setup-python.mjs` once per process: it creates or updates trainer/.venv. */
function ensureVenv(): Promise<string> {
  venvReady ??= run(process.execPath, [join(repo, 'scripts', 'setup-python.mjs')], '');
  return venvReady;
}

/** This process's environment with trainer/ first on PYTHONPATH, and `env` over it (undefined: removed). */
function pythonEnv(env: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {
    ...process.env,
    PYTHONPATH: [trainer, process.env.PYTHONPATH].filter(Boolean).join(':'),
  };
  for (const [key, value] of Object.entries(env))
    if (value === undefined) delete out[key];
    else out[key] = value;
  return out;
}

function run(
  command: string,
  args: readonly string[],
  stdin: string,
  env?: NodeJS.ProcessEnv,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: trainer,
      env: pythonEnv(env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${err.slice(-2000)}`)),
    );
    child.stdin.end(stdin);
  });
}

/**
 * `bench/python/<script> [args]` with `input` as JSON on stdin; the JSON on its last stdout line.
 * `env` is set over this process's environment (a key set to undefined is removed).
 */
export async function callPython<T>(
  script: string,
  args: readonly string[],
  input: unknown = {},
  env?: NodeJS.ProcessEnv,
): Promise<T> {
  await ensureVenv();
  const path = join(repo, 'bench', 'python', script);
  const out = await run(venvPython, [path, ...args], JSON.stringify(input), env);
  const last = out.trim().split('\n').at(-1) ?? '';
  return JSON.parse(last) as T;
}

/** `bench/python/<script> [args]` left running, its stdio piped (a line protocol). */
export async function spawnPython(
  script: string,
  args: readonly string[],
): Promise<ChildProcessWithoutNullStreams> {
  await ensureVenv();
  return spawn(venvPython, [join(repo, 'bench', 'python', script), ...args], {
    cwd: trainer,
    env: pythonEnv(),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** Whether `import <module>` works in the venv (after setting it up). */
export async function venvHasModule(module: string): Promise<boolean> {
  await ensureVenv();
  return run(venvPython, ['-c', `import ${module}`], '').then(
    () => true,
    () => false,
  );
}
