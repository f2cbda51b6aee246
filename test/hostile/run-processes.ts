/**
 * The processes of a `spa run` as /proc shows them (Linux): its descendants, and any process whose
 * command line names the run, so a child started or orphaned after a snapshot is found too.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** One process: its pid, parent, start time (clock ticks since boot) and command line. */
interface ProcessInfo {
  readonly pid: number;
  readonly ppid: number;
  readonly start: string;
  readonly command: string;
}

function processInfo(pid: number): ProcessInfo | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // a zombie has ended: it waits only for its parent to read its exit status
    if (fields[0] === 'Z') return undefined;
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
    return { pid, ppid: Number(fields[1]), start: fields[19]!, command };
  } catch {
    return undefined;
  }
}

function allProcesses(): ProcessInfo[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((name) => processInfo(Number(name)) ?? []);
}

/** `root` and its descendants, alive now. */
export function processTree(root: number): ProcessInfo[] {
  const all = allProcesses();
  const tree = all.filter((p) => p.pid === root);
  for (let i = 0; i < tree.length; i++) tree.push(...all.filter((p) => p.ppid === tree[i]!.pid));
  return tree;
}

/**
 * The processes of `snapshot` still alive (the same pid and start time), and any other process
 * (not this one) whose command line contains `mark` (the run id): what a run left running.
 */
export function leftOf(snapshot: readonly ProcessInfo[], mark: string): ProcessInfo[] {
  const all = allProcesses();
  const same = (p: ProcessInfo) => snapshot.some((s) => s.pid === p.pid && s.start === p.start);
  return all.filter((p) => p.pid !== process.pid && (same(p) || p.command.includes(mark)));
}

/** SIGKILLs `processes` (a failed test's orphans), so they do not outlive it. */
export function killAll(processes: readonly ProcessInfo[]): void {
  for (const p of processes)
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // gone already
    }
}
