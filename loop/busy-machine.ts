/**
 * What the run knows of other processes' CPU use: a warning when they make the machine busy (on a
 * shared machine a run takes several times as long and the trainers' `tok/s` lines swing with the
 * other load, 513 to 35,000 tokens/s seen on the 2-core box, which looks like a fault of the run
 * unless something says why), and the cores' worth they use, from which the trainers' OpenMP
 * threads wait passively (openmp-env.ts).
 */
import { availableParallelism, loadavg } from 'node:os';
import { machineBusySeconds, treeCpuSeconds } from '../infra/process/proc-stat.js';

/** The machine's load average over the last minute, the part of it this run made, and its cores. */
export interface MachineLoad {
  readonly load: number;
  readonly own: number;
  readonly cores: number;
}

/** The warning for `load`: busy when other processes alone want more than every core. */
export function busyWarning({ load, own, cores }: MachineLoad): string | undefined {
  if (load - own <= cores) return undefined;
  return (
    `the machine is busy: load ${load.toFixed(1)} over the last minute on ${cores} cores, ` +
    `${(load - own).toFixed(1)} of it from other processes that share the CPU with this run. It will be ` +
    `slower, and the trainers' tok/s lines will swing with the other processes' load, not with this run's settings.`
  );
}

/** CPU seconds so far: every core's busy time since boot, and this run's (its process tree's). */
interface CpuReading {
  readonly machine: number;
  readonly own: number;
}

/** What a check reads: the load average and cores, the CPU seconds (undefined without /proc), the time. */
export interface LoadReadings {
  readonly load: () => { load: number; cores: number };
  readonly cpu: () => CpuReading | undefined;
  readonly now: () => number;
}

/** CPU seconds of this process's tree; without /proc, this process's own. */
function ownCpuSeconds(): number {
  const tree = treeCpuSeconds(process.pid);
  if (tree !== undefined) return tree;
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

const MACHINE: LoadReadings = {
  load: () => ({ load: loadavg()[0] ?? 0, cores: availableParallelism() }),
  cpu: () => {
    const machine = machineBusySeconds();
    return machine === undefined ? undefined : { machine, own: ownCpuSeconds() };
  },
  now: Date.now,
};

/** The shortest stretch between two CPU readings that measures the others' cores. */
const MIN_WINDOW_S = 1;

/**
 * A check to call at the start and between stages. It warns (through `warn`) when the load average
 * says the machine has become busy, once until it is not, so a busy stretch is one line; the run's
 * own part of the load (its CPU seconds since the last check over at least the minute the load
 * average covers) is not counted. It returns the cores' worth of CPU other processes used since the
 * last check (the machine's busy time less this run's process tree's, over the wall time). The
 * one-minute load average lags: it still holds work that ended before the run and the broker's
 * start, which made an idle machine look shared and slowed the default run's warm-up by a quarter;
 * it stands in only at the first check, or where /proc is missing.
 */
export function busyMachineCheck(warn: (line: string) => void, read: LoadReadings = MACHINE): () => number {
  let busy = false;
  let window = { at: read.now(), cpu: read.cpu() };
  let lastWarn = { at: window.at - process.uptime() * 1000, own: 0 };
  let others: number | undefined;
  return () => {
    const at = read.now();
    const cpu = read.cpu();
    const own = cpu?.own ?? 0;
    const ownLoad = (own - lastWarn.own) / Math.max(60, (at - lastWarn.at) / 1000);
    lastWarn = { at, own };
    const machine = { ...read.load(), own: ownLoad };
    const warning = busyWarning(machine);
    if (warning && !busy) warn(warning);
    busy = warning !== undefined;
    const seconds = (at - window.at) / 1000;
    if (cpu && window.cpu && seconds >= MIN_WINDOW_S) {
      others = Math.max(0, (cpu.machine - window.cpu.machine - (cpu.own - window.cpu.own)) / seconds);
      window = { at, cpu };
    }
    return others ?? Math.max(0, machine.load - ownLoad);
  };
}
