/**
 * A warning when other processes already use the CPU: on a shared machine a run takes several
 * times as long and the trainers' `tok/s` lines swing with the other load (513 to 35,000 tokens/s
 * seen on the 2-core box), which looks like a fault of the run unless something says why.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';

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

/**
 * CPU seconds this process and its ended children (the trainers and generators of earlier stages,
 * waited for by Node) have used: /proc/self/stat's utime, stime, cutime and cstime (proc(5); clock
 * ticks of 1/100 s on Linux). Elsewhere, this process's own.
 */
function ownCpuSeconds(): number {
  try {
    const afterName = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
    // fields 14–17 of proc(5); afterName starts at field 3 (state)
    return [11, 12, 13, 14].reduce((sum, i) => sum + Number(afterName[i]), 0) / 100;
  } catch {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1e6;
  }
}

/** What a check reads: the load average and cores, this run's CPU seconds so far, the time. */
export interface LoadReadings {
  readonly load: () => { load: number; cores: number };
  readonly ownCpuSeconds: () => number;
  readonly now: () => number;
}

const MACHINE: LoadReadings = {
  load: () => ({ load: loadavg()[0] ?? 0, cores: availableParallelism() }),
  ownCpuSeconds,
  now: Date.now,
};

/**
 * A check to call at the start and between stages: it warns (through `warn`) when the machine has
 * become busy, once until it is not, so a busy stretch is one line, and returns the cores' worth of
 * CPU other processes use (openmp-env.ts). The run's own part of the load (its CPU seconds since
 * the last check over at least the minute the load average covers) is not counted: a stage whose
 * trainer and generator used both cores does not make the machine busy.
 */
export function busyMachineCheck(warn: (line: string) => void, read: LoadReadings = MACHINE): () => number {
  let busy = false;
  let last = { at: read.now() - process.uptime() * 1000, cpu: 0 };
  return () => {
    const sample = { at: read.now(), cpu: read.ownCpuSeconds() };
    const own = (sample.cpu - last.cpu) / Math.max(60, (sample.at - last.at) / 1000);
    last = sample;
    const machine = { ...read.load(), own };
    const warning = busyWarning(machine);
    if (warning && !busy) warn(warning);
    busy = warning !== undefined;
    return Math.max(0, machine.load - own);
  };
}
