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
      cpu: () => ({ machine: 0, own: readings[i]![1] }),
      now: () => 1_000_000 + 120_000 * i,
    };
    const warned: number[] = [];
    const check = busyMachineCheck(() => warned.push(i), read);
    for (; i < readings.length; i++) check();
    expect(warned).toEqual([1, 5]);
  });

  it('measures the other processes’ cores since the last check, not from the lagging load average', () => {
    // [load average, the machine's busy CPU seconds, this run's] at each check, 10 s apart
    const readings: [number, number, number][] = [
      [1.9, 1000, 0], // the first check, as the run starts: work that ended before it is in the load average
      [1.8, 1015, 15], // the broker's start and the warm-up data, all the run's own
      [1.7, 1045, 25], // another process on two cores while the run used one
      [0.9, 1055, 35], // the run alone again
    ];
    let i = 0;
    const read: LoadReadings = {
      load: () => ({ load: readings[i]![0], cores: 2 }),
      cpu: () => ({ machine: readings[i]![1], own: readings[i]![2] }),
      now: () => 1_000_000 + 10_000 * i,
    };
    const check = busyMachineCheck(() => {}, read);
    const others: number[] = [];
    for (; i < readings.length; i++) others.push(check());
    // no stretch to measure at the first check: the load average less the run's own (none yet)
    expect(others[0]).toBeCloseTo(1.9);
    expect(others.slice(1)).toEqual([0, 2, 0]);
  });

  it('reads the load less the run’s own where /proc is missing', () => {
    let i = 0;
    const read: LoadReadings = {
      load: () => ({ load: [1.2, 3.2][i]!, cores: 2 }),
      cpu: () => undefined,
      now: () => 1_000_000 + 120_000 * i,
    };
    const check = busyMachineCheck(() => {}, read);
    i = 1;
    expect(check()).toBeCloseTo(3.2);
  });
});
