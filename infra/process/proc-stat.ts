/**
 * What Linux's procfs says of processes and of the machine's CPU (proc(5)): one reader for the
 * run's busy-machine check, its run lock and the benches. Times are in clock ticks of 1/100 s
 * (USER_HZ). Each reader returns undefined where /proc is missing (macOS) or the process is gone.
 */
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100;

/** The fields of /proc/<pid>/stat this project reads. */
export interface ProcStat {
  readonly ppid: number;
  /** utime + stime: the process's own CPU seconds. */
  readonly cpuSeconds: number;
  /** cutime + cstime: the CPU seconds of its children it has waited for. */
  readonly childrenCpuSeconds: number;
  /** starttime: with the pid, it names one process for good. */
  readonly startTime: string;
}

/** /proc/<pid>/stat of `pid`. */
export function procStat(pid: number | 'self'): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // the command name (field 2) may hold spaces and parentheses: the fields resume after its last ')'
  const f = text.slice(text.lastIndexOf(')') + 2).split(' '); // f[0] is field 3, the state
  const tick = (i: number) => Number(f[i]) / TICKS_PER_SECOND;
  return {
    ppid: Number(f[1]),
    cpuSeconds: tick(11) + tick(12),
    childrenCpuSeconds: tick(13) + tick(14),
    startTime: f[19] ?? '',
  };
}

/**
 * CPU seconds `root` and every live process under it have used, with the children each has waited
 * for: a child that ended between two readings is still counted, in its parent's children's time.
 */
export function treeCpuSeconds(root: number): number | undefined {
  let pids: number[];
  try {
    pids = readdirSync('/proc')
      .filter((name) => /^\d+$/.test(name))
      .map(Number);
  } catch {
    return undefined;
  }
  const stats = new Map<number, ProcStat>();
  for (const pid of pids) {
    const stat = procStat(pid);
    if (stat) stats.set(pid, stat);
  }
  const children = new Map<number, number[]>();
  for (const [pid, { ppid }] of stats) {
    const siblings = children.get(ppid);
    if (siblings) siblings.push(pid);
    else children.set(ppid, [pid]);
  }
  let seconds = 0;
  const pending = [root];
  for (let pid = pending.pop(); pid !== undefined; pid = pending.pop()) {
    const stat = stats.get(pid);
    if (stat) seconds += stat.cpuSeconds + stat.childrenCpuSeconds;
    pending.push(...(children.get(pid) ?? []));
  }
  return stats.has(root) ? seconds : undefined;
}

/** CPU seconds every core has spent busy since boot: /proc/stat's first line less idle and iowait. */
export function machineBusySeconds(): number | undefined {
  let line: string;
  try {
    line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  } catch {
    return undefined;
  }
  // cpu user nice system idle iowait irq softirq steal: all but idle (3) and iowait (4); guest time
  // is inside user and nice
  const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number);
  const busy = [0, 1, 2, 5, 6, 7].reduce((sum, field) => sum + (ticks[field] ?? 0), 0);
  return busy / TICKS_PER_SECOND;
}
