/**
 * One process at a time runs a run id: `<run>/run.lock` names the process that holds the run (its
 * pid and start time). A second `spa run --run-id <id>` while the holder lives is refused; a lock
 * whose holder is dead (killed with SIGKILL, the machine rebooted) is stale and replaced. Two
 * attempts at once would train two trainers into one folder and play two generators into one run.
 */
import {
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

/** What the lock file holds. */
interface LockHolder {
  readonly pid: number;
  /** When the holder started, in clock ticks since boot (proc(5) `starttime`); null where unknown. */
  readonly processStart: string | null;
  /** When it took the lock (ISO 8601), for the refusal's message. */
  readonly since: string;
}

/** A run id that another live process holds: `spa run` refuses it (exit 2). */
export class RunLockedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RunLockedError';
  }
}

/** Field 22 of /proc/<pid>/stat (`starttime`): with the pid, it names one process for good. */
function processStart(pid: number | 'self'): string | null {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether `holder` still runs: its pid is alive and (where /proc tells) is the same process. */
function alive(holder: LockHolder): boolean {
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: a live process of another user
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const start = processStart(holder.pid);
  return holder.processStart === null || start === null || start === holder.processStart;
}

/** The lock's holder, or undefined for a file that holds none (it is never written partly: see below). */
function readHolder(file: string): { text: string; holder: LockHolder | undefined } | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    return { text, holder: JSON.parse(text) as LockHolder };
  } catch {
    return { text, holder: undefined };
  }
}

/** Removes `file` if it holds `text` (a lock read earlier, or this process's own). */
function removeIfSame(file: string, text: string): void {
  if (readHolder(file)?.text !== text) return;
  try {
    unlinkSync(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
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
  const mine: LockHolder = {
    pid: process.pid,
    processStart: processStart('self'),
    since: new Date().toISOString(),
  };
  const text = JSON.stringify(mine) + '\n';
  // Written whole aside, then linked into place: link(2) fails if the lock exists, as an O_EXCL
  // create does, and the lock never exists half-written.
  const aside = `${file}.${process.pid}`;
  writeFileSync(aside, text);
  try {
    for (let tries = 0; ; tries++) {
      try {
        linkSync(aside, file);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || tries >= 3) throw error;
      }
      const found = readHolder(file);
      if (found?.holder && alive(found.holder))
        throw new RunLockedError(
          `run "${runId}" is running in another process: pid ${found.holder.pid} (since ${found.holder.since}) holds ${file}; ` +
            `wait for it to end, or stop it (kill ${found.holder.pid}) and resume`,
        );
      // Stale: removed only if it is still the one read, so of two starts replacing it at once the
      // second finds the first's live lock (a few microseconds between the read and the unlink remain).
      if (found) removeIfSame(file, found.text);
    }
  } finally {
    unlinkSync(aside);
  }
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    process.off('exit', release);
    removeIfSame(file, text);
    if (readdirSync(runDir).length === 0) rmdirSync(runDir);
  };
  process.on('exit', release);
  return release;
}
