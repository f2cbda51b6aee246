/**
 * The procfs readers (infra/process/proc-stat.ts) on this Linux machine: a process tree's CPU seconds keep
 * a child's time once it has ended, and the machine's busy seconds grow by what a spinning child used.
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { machineBusySeconds, procStat, treeCpuSeconds } from '../../infra/process/proc-stat.js';

/** A child that spins until it has used `ms` of CPU time (not wall time: a busy machine stretches that), waited for. */
function spinChild(ms: number): void {
  const script = `const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; }; const end = cpu() + ${ms}; while (cpu() < end);`;
  expect(spawnSync(process.execPath, ['-e', script]).status).toBe(0);
}

describe('procfs readers', () => {
  it('reads this process: its parent, CPU seconds and start time', () => {
    const self = procStat('self')!;
    expect(self.ppid).toBe(process.ppid);
    expect(self.cpuSeconds).toBeGreaterThan(0);
    expect(self.startTime).toMatch(/^\d+$/);
    expect(procStat(2 ** 22 + 1)).toBeUndefined(); // above pid_max
  });

  it('counts an ended child in its parent tree, and its busy time on the machine', () => {
    // this process first: its CPU time only grows, so the tree read after it holds at least as much
    const self = procStat('self')!.cpuSeconds;
    const tree = treeCpuSeconds(process.pid)!;
    const machine = machineBusySeconds()!;
    expect(tree).toBeGreaterThanOrEqual(self);
    spinChild(600);
    expect(treeCpuSeconds(process.pid)! - tree).toBeGreaterThan(0.4);
    expect(machineBusySeconds()! - machine).toBeGreaterThan(0.4);
    expect(treeCpuSeconds(2 ** 22 + 1)).toBeUndefined();
  });
});
