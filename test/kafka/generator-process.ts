import { spawn } from 'node:child_process';

/** What a `spa generate` child left when it exited. */
interface GeneratorExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** A `spa generate` child process the test can freeze, thaw and kill. */
export interface GeneratorProcess {
  readonly pause: () => void;
  readonly resume: () => void;
  readonly kill: () => void;
  readonly exited: Promise<GeneratorExit>;
}

/** Runs `spa generate <args>` against `brokers` as a child process, as a user runs it. */
export function spawnGenerator(args: readonly string[], brokers: readonly string[]): GeneratorProcess {
  const child = spawn(process.execPath, ['bin/spa.mjs', 'generate', ...args], {
    env: { ...process.env, KAFKA_BROKERS: brokers.join(',') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<GeneratorExit>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return {
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    kill: () => child.kill('SIGKILL'),
    exited,
  };
}

/**
 * Lets `generator` run in short slices (SIGCONT … SIGSTOP) until part of its run, but not all, is
 * committed, and leaves it frozen there; returns how many trajectories were committed. The count
 * is read while the child is frozen, so a test that acts next (kills the child or its broker)
 * acts mid-run whatever the machine's speed — a progress line, printed once a second, can arrive
 * after a fast machine has finished.
 */
export async function freezeMidRun(
  generator: GeneratorProcess,
  committed: () => Promise<number>,
  total: number,
  options: { sliceMs?: number; timeoutMs?: number } = {},
): Promise<number> {
  const sliceMs = options.sliceMs ?? 100;
  const deadline = Date.now() + (options.timeoutMs ?? 300_000);
  let exited = false;
  void generator.exited.then(() => (exited = true));
  for (;;) {
    generator.pause();
    const count = await committed();
    if (count >= total || exited)
      throw new Error(
        `the generator committed ${count}/${total} trajectories within one ${sliceMs} ms slice: nothing left to cut mid-run (make the run longer)`,
      );
    if (count > 0) return count;
    if (Date.now() > deadline)
      throw new Error(`no trajectory committed within ${options.timeoutMs ?? 300_000} ms`);
    generator.resume();
    await new Promise((resolve) => setTimeout(resolve, sliceMs));
  }
}
