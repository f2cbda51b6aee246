/**
 * Issue 36 item 9: a run on a busy machine (load above its cores) says so at the start and when it
 * becomes busy between stages, and why the trainers' speed swings.
 */
import { describe, expect, it } from 'vitest';
import { busyMachineCheck, busyWarning } from '../../cli/run/busy-machine.js';

describe('the busy-machine warning', () => {
  it('warns when the load is above the cores, naming both, and why tok/s swings', () => {
    const warning = busyWarning({ load: 3.34, cores: 2 });
    expect(warning).toMatch(/^the machine is busy: load 3\.3 over the last minute on 2 cores/);
    expect(warning).toContain('It will be slower');
    expect(warning).toContain("the trainers' tok/s lines will swing with the other processes' load");
    expect(busyWarning({ load: 2, cores: 2 })).toBeUndefined();
    expect(busyWarning({ load: 0.4, cores: 8 })).toBeUndefined();
  });

  it('is checked at the start and between stages, once for each busy stretch', () => {
    const loads = [1.2, 3.1, 3.5, 1.0, 4.2, 4.0];
    const warned: number[] = [];
    let i = 0;
    const check = busyMachineCheck(
      () => warned.push(i - 1),
      () => ({ load: loads[i++]!, cores: 2 }),
    );
    for (let n = 0; n < loads.length; n++) check();
    expect(warned).toEqual([1, 4]);
  });
});
