import { spawn, type ChildProcess } from 'node:child_process';

/** What a finished `spa` command left: how it ended and everything it printed. */
export interface SpaResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A running `spa` command: the child process, and its result once it has ended. */
export interface SpaProcess {
  readonly child: ChildProcess;
  readonly ended: Promise<SpaResult>;
}

/**
 * Starts `spa <args>` (bin/spa.mjs) against `brokers`, as a user would; `env` is added to this
 * process's environment (e.g. KAFKA_SASL_USERNAME).
 */
export function spawnSpa(
  args: readonly string[],
  brokers: readonly string[],
  env: NodeJS.ProcessEnv = {},
): SpaProcess {
  const child = spawn(process.execPath, ['bin/spa.mjs', ...args], {
    env: { ...process.env, ...env, KAFKA_BROKERS: brokers.join(',') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const ended = new Promise<SpaResult>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, ended };
}

/** Runs `spa <args>` to completion against `brokers` (`env` as for {@link spawnSpa}). */
export function runSpa(
  args: readonly string[],
  brokers: readonly string[],
  env: NodeJS.ProcessEnv = {},
): Promise<SpaResult> {
  return spawnSpa(args, brokers, env).ended;
}
