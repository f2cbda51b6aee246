/**
 * A lock file that names the live process holding it (its pid and start time): a run folder's
 * (loop/run-lock.ts) and a local broker's start (infra/kafka/broker.ts). A lock whose holder is
 * dead (killed with SIGKILL, the machine rebooted) is stale and replaced.
 */
import { linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { procStat } from './proc-stat.js';

/** What the lock file holds. */
export interface LockHolder {
  readonly pid: number;
  /** When the holder started, in clock ticks since boot (proc(5) `starttime`); null where unknown. */
  readonly processStart: string | null;
  /** When it took the lock (ISO 8601), for messages. */
  readonly since: string;
}

/** The lock, taken: `release` removes it (only if it is still this one). */
export interface HeldLock {
  readonly release: () => void;
}

/** Whether `holder` still runs: its pid is alive and (where /proc tells) is the same process. */
function alive(holder: LockHolder): boolean {
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: a live process of another user
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const start = procStat(holder.pid)?.startTime ?? null;
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

/** Takes the lock `file` (its folder must exist) for this process, or returns its live holder. */
export function tryLock(file: string): HeldLock | LockHolder {
  const mine: LockHolder = {
    pid: process.pid,
    processStart: procStat('self')?.startTime ?? null,
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
        return { release: () => removeIfSame(file, text) };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || tries >= 3) throw error;
      }
      const found = readHolder(file);
      if (found?.holder && alive(found.holder)) return found.holder;
      // Stale: removed only if it is still the one read, so of two starts replacing it at once the
      // second finds the first's live lock (a few microseconds between the read and the unlink remain).
      if (found) removeIfSame(file, found.text);
    }
  } finally {
    unlinkSync(aside);
  }
}
