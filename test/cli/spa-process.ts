import { spawn } from 'node:child_process';

/** What a finished `spa` command left: its exit code and everything it printed. */
export interface SpaResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `spa <args>` (bin/spa.mjs) to completion against `brokers`, as a user would. */
export function runSpa(args: readonly string[], brokers: readonly string[]): Promise<SpaResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/spa.mjs', ...args], {
      env: { ...process.env, KAFKA_BROKERS: brokers.join(',') },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
