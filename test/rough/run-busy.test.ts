/**
 * Issue 36 item 9: a run on a busy machine (load above its cores) says so at the start and when it
 * becomes busy between stages, and why the trainers' speed swings; its own load is not "busy".
 */
import { describe, expect, it } from 'vitest';
import { busyMachineCheck, busyWarning, type LoadReadings } from '../../loop/busy-machine.js';

describe('the busy-machine warning', () => {
  it('warns when the load is above the cores, naming both, and why tok/s swings', () => {
    const warning = busyWarning({ load: 3.34, own: 0, cores: 2 });
    expect(warning).toMatch(
      /^the machine is busy: load 3\.3 over the last minute on 2 cores, 3\.3 of it from other/,
    );
    expect(warning).toContain('It will be slower');
    expect(warning).toContain("the trainers' tok/s lines will swing with the other processes' load");
    expect(busyWarning({ load: 2, own: 0, cores: 2 })).toBeUndefined();
    expect(busyWarning({ load: 0.4, own: 0, cores: 8 })).toBeUndefined();
    // a trainer and a generator of this run on both cores
    expect(busyWarning({ load: 2.9, own: 1.9, cores: 2 })).toBeUndefined();
  });

  it('is checked at the start and between stages, once for each busy stretch, without the run’s own load', () => {
    // [load average, this run's CPU seconds] at the start and after each 120 s stage
    const readings: [number, number][] = [
      [1.2, 0],
      [3.1, 10], // others at 3.0: busy
      [3.5, 20], // still busy: no second line
      [1.0, 30],
      [3.2, 270], // the run's own 2 cores (240 s of CPU in 120 s): not busy
      [4.2, 290], // others at 4.0: busy again
    ];
    let i = 0;
    const read: LoadReadings = {
      load: () => ({ load: readings[i]![0], cores: 2 }),
      ownCpuSeconds: () => readings[i]![1],
      now: () => 1_000_000 + 120_000 * i,
    };
    const warned: number[] = [];
    const check = busyMachineCheck(() => warned.push(i), read);
    const others: number[] = [];
    for (; i < readings.length; i++) others.push(check());
    expect(warned).toEqual([1, 5]);
    // what the trainers' OpenMP setting reads (openmp-env.ts): the load less the run's own cores
    expect(others[1]).toBeCloseTo(3.1 - 10 / 120);
    expect(others[4]).toBeCloseTo(3.2 - 240 / 120);
  });
});
