/**
 * The lifeline between `spa run` and its children (generator shards, trainers, exports): a child
 * ends when its parent ends, however the parent ends (Ctrl-C, SIGTERM, SIGHUP, SIGKILL, a crash).
 * A child cannot count on its parent's handlers, since SIGKILL runs none: it notices the parent is
 * gone itself. Each child's stdin is a pipe whose only write end the parent holds and never writes;
 * the kernel closes it when the parent dies, whatever killed it. A Node child (`spa generate
 * --shard`) exits at that end of file ({@link exitWithParent}). The Python trainer asks the kernel
 * for SIGKILL at its parent's death (PR_SET_PDEATHSIG, trainer/spa_trainer/lifeline.py) and checks
 * that its parent is still {@link PARENT_PID_VARIABLE}, for a parent that died before it asked.
 */
import { spawn, type ChildProcess } from 'node:child_process';

/** The pid of the process a child is tied to, set in the child's environment by {@link spawnTied}. */
const PARENT_PID_VARIABLE = 'SPA_PARENT_PID';

/** Children still running: stopped when this process exits (its handlers run, e.g. on Ctrl-C). */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGTERM');
});

/** Where a tied child's stdout and stderr go. */
export interface TiedOptions {
  readonly cwd?: string;
  /** Added to this process's environment. */
  readonly env?: NodeJS.ProcessEnv;
  readonly stdout: 'pipe' | 'inherit';
  readonly stderr: 'pipe' | 'inherit';
}

/**
 * Spawns `command args` tied to this process: stopped (SIGTERM) when this process exits with its
 * handlers run, and ending by itself when this process dies without them (the lifeline on stdin).
 * Every child `spa run` starts is spawned here.
 */
export function spawnTied(command: string, args: readonly string[], options: TiedOptions): ChildProcess {
  const child = spawn(command, args, {
    ...(options.cwd ? { cwd: options.cwd } : {}),
    env: { ...process.env, ...options.env, [PARENT_PID_VARIABLE]: String(process.pid) },
    stdio: ['pipe', options.stdout, options.stderr],
  });
  running.add(child);
  // Nothing is ever written: an EPIPE once the child has ended is no news.
  child.stdin!.on('error', () => {});
  child.on('exit', () => {
    running.delete(child);
    child.stdin!.destroy();
  });
  return child;
}

/**
 * In a child spawned by {@link spawnTied}: exits (code 1, one line on stderr) once the parent is
 * gone, i.e. at the end of file of stdin. A pipe's end of file stays, so a parent that died before
 * this call is noticed too. Outside such a child (no {@link PARENT_PID_VARIABLE}) it does nothing,
 * so `spa parse` and `spa env step` keep reading their stdin. The watch keeps no process alive.
 */
export function exitWithParent(): void {
  const parent = process.env[PARENT_PID_VARIABLE];
  if (parent === undefined) return;
  // this process's own children are tied to it, not to its parent
  delete process.env[PARENT_PID_VARIABLE];
  const gone = () => {
    try {
      process.stderr.write(`[spa] stopping: the process that started this one (pid ${parent}) is gone\n`);
    } finally {
      process.exit(1);
    }
  };
  process.stdin.once('end', gone).once('error', gone);
  process.stdin.resume();
  // a pipe's stdin is a socket: unref'd, it keeps no finished command waiting for its parent
  (process.stdin as { unref?: () => void }).unref?.();
}
