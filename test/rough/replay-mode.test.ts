/**
 * Which trajectories `spa replay --mode` takes, and the line it prints about them (issue 36, item 3):
 * a run's trajectories topic holds its wm SFT data and its base-mode PPO rollouts.
 */
import { describe, expect, it } from 'vitest';
import { describeReplay, takesTrajectory } from '../../streams/kafka/replay.js';

describe('takesTrajectory', () => {
  it('wm and base take their own mode only; all takes both', () => {
    const wm = { mode: 'wm' as const };
    const base = { mode: 'base' as const };
    expect([takesTrajectory('wm', wm), takesTrajectory('wm', base)]).toEqual([true, false]);
    expect([takesTrajectory('base', wm), takesTrajectory('base', base)]).toEqual([false, true]);
    expect([takesTrajectory('all', wm), takesTrajectory('all', base)]).toEqual([true, true]);
  });
});

describe('describeReplay', () => {
  it("names what the default wm replay took and the PPO rollouts it left out (the issue's run)", () => {
    expect(describeReplay({ mode: 'wm', replayed: { wm: 1230 }, skipped: { base: 240 }, rows: 4100 })).toBe(
      'replayed 1,230 trajectories (wm) into 4,100 SFT rows; ' +
        'skipped 240 base-mode trajectories (PPO rollouts; --mode all takes them)',
    );
  });

  it('says nothing about skipping when nothing was skipped', () => {
    expect(describeReplay({ mode: 'wm', replayed: { wm: 24 }, skipped: {}, rows: 80 })).toBe(
      'replayed 24 trajectories (wm) into 80 SFT rows',
    );
  });

  it('--mode base names the world-model data it left out', () => {
    expect(describeReplay({ mode: 'base', replayed: { base: 8 }, skipped: { wm: 12 }, rows: 3 })).toBe(
      'replayed 8 trajectories (base) into 3 SFT rows; ' +
        'skipped 12 wm-mode trajectories (world-model SFT data; --mode all takes them)',
    );
  });

  it('--mode all counts both modes', () => {
    expect(describeReplay({ mode: 'all', replayed: { wm: 1230, base: 240 }, skipped: {}, rows: 4400 })).toBe(
      'replayed 1,470 trajectories (all modes: 1,230 wm, 240 base) into 4,400 SFT rows',
    );
    expect(describeReplay({ mode: 'all', replayed: {}, skipped: {}, rows: 0 })).toBe(
      'replayed 0 trajectories (all modes: none) into 0 SFT rows',
    );
  });
});
