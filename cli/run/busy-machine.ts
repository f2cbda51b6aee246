/**
 * A warning when other processes already use the CPU: on a shared machine a run takes several
 * times as long and the trainers' `tok/s` lines swing with the other load (513 to 35,000 tokens/s
 * seen on the 2-core box), which looks like a fault of the run unless something says why.
 */
import { availableParallelism, loadavg } from 'node:os';

/** The machine's load average over the last minute, and its cores. */
export interface MachineLoad {
  readonly load: number;
  readonly cores: number;
}

/** This machine's load now. */
function machineLoad(): MachineLoad {
  return { load: loadavg()[0] ?? 0, cores: availableParallelism() };
}

/** The warning for `load`: busy when more processes want a core than there are cores. */
export function busyWarning({ load, cores }: MachineLoad): string | undefined {
  if (load <= cores) return undefined;
  return (
    `the machine is busy: load ${load.toFixed(1)} over the last minute on ${cores} cores, so other ` +
    `processes share the CPU with this run. It will be slower, and the trainers' tok/s lines will ` +
    `swing with the other processes' load, not with this run's settings.`
  );
}

/**
 * A check to call at the start and between stages: it warns (through `warn`) when the machine has
 * become busy, once until the load falls back to the cores, so a busy stretch is one line.
 */
export function busyMachineCheck(
  warn: (line: string) => void,
  read: () => MachineLoad = machineLoad,
): () => void {
  let busy = false;
  return () => {
    const warning = busyWarning(read());
    if (warning && !busy) warn(warning);
    busy = warning !== undefined;
  };
}
