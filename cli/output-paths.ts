/**
 * Output paths checked before a command does any work: a run that can only fail when it writes
 * its first line (or its last) should fail at once, with a message naming the flag.
 */
import { accessSync, constants, statSync, type Stats } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { UsageError } from './options.js';

function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks that `path` (given as `flag`) can be written as a file: it is not a directory, and its
 * directory exists and is writable (or, with `createParents`, the nearest existing ancestor is a
 * writable directory, for commands that create the folders). Throws a {@link UsageError}.
 */
export function checkOutputFile(flag: string, path: string, { createParents = false } = {}): void {
  if (statOf(path)?.isDirectory()) throw new UsageError(`${flag} ${path} is a directory; give a file path`);
  checkDirectory(flag, path, dirname(resolve(path)), createParents);
}

/**
 * Checks that `path` (given as `flag`) can hold new files: a writable directory, or one that can
 * be created (its nearest existing ancestor is a writable directory). Throws a {@link UsageError}.
 */
export function checkOutputDirectory(flag: string, path: string): void {
  const stat = statOf(path);
  if (stat && !stat.isDirectory()) throw new UsageError(`${flag} ${path} is a file, not a directory`);
  if (stat && !writable(path)) throw new UsageError(`${flag} ${path}: the directory is not writable`);
  if (!stat) checkDirectory(flag, path, dirname(resolve(path)), true);
}

/** `dir`, where `path` goes: it exists as a writable directory (or, `create`, its nearest existing ancestor does). */
function checkDirectory(flag: string, path: string, dir: string, create: boolean): void {
  let existing = dir;
  while (create && statOf(existing) === undefined && dirname(existing) !== existing)
    existing = dirname(existing);
  const stat = statOf(existing);
  if (stat === undefined) throw new UsageError(`${flag} ${path}: the directory ${dir} does not exist`);
  if (!stat.isDirectory()) throw new UsageError(`${flag} ${path}: ${existing} is not a directory`);
  if (!writable(existing)) throw new UsageError(`${flag} ${path}: the directory ${existing} is not writable`);
}
