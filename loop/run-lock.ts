/**
 * One process at a time runs a run id: `<run>/run.lock` names the process that holds the run (its
 * pid and start time). A second `spa run --run-id <id>` while the holder lives is refused; a lock
 * whose holder is dead (killed with SIGKILL, the machine rebooted) is stale and replaced. Two
 * attempts at once would train two trainers into one folder and play two generators into one run.
 */
import { mkdirSync, readdirSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { tryLock } from '../infra/process/lock-file.js';

/** A run id that another live process holds: `spa run` refuses it (exit 2). */
export class RunLockedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RunLockedError';
  }
}

/**
 * Takes the lock of the run folder `runDir` (made if missing) for this process, or throws
 * {@link RunLockedError} naming the live holder. Returns the release, which also runs when this
 * process exits (Ctrl-C, a crash); a failed start's release leaves no empty run folder behind.
 */
export function holdRunLock(runDir: string, runId: string): () => void {
  mkdirSync(runDir, { recursive: true });
  const file = join(runDir, 'run.lock');
  const lock = tryLock(file);
  if (!('release' in lock))
    throw new RunLockedError(
      `run "${runId}" is running in another process: pid ${lock.pid} (since ${lock.since}) holds ${file}; ` +
        `wait for it to end, or stop it (kill ${lock.pid}) and resume`,
    );
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    process.off('exit', release);
    lock.release();
    if (readdirSync(runDir).length === 0) rmdirSync(runDir);
  };
  process.on('exit', release);
  return release;
}
