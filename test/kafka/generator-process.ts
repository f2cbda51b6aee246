import { spawnSpa, type SpaResult } from '../cli/spa-process.js';

/** A `spa generate` child process the test can freeze, thaw and kill. */
export interface GeneratorProcess {
  readonly pause: () => void;
  readonly resume: () => void;
  readonly kill: () => void;
  readonly exited: Promise<SpaResult>;
}

/** Runs `spa generate <args>` against `brokers` as a child process, as a user runs it. */
export function spawnGenerator(args: readonly string[], brokers: readonly string[]): GeneratorProcess {
  const { child, ended } = spawnSpa(['generate', ...args], brokers);
  return {
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    kill: () => child.kill('SIGKILL'),
    exited: ended,
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
  const timeoutMs = options.timeoutMs ?? 300_000;
  const deadline = Date.now() + timeoutMs;
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
    if (Date.now() > deadline) throw new Error(`no trajectory committed within ${timeoutMs} ms`);
    generator.resume();
    await new Promise((resolve) => setTimeout(resolve, sliceMs));
  }
}
