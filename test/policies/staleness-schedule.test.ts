/**
 * `spa run`'s self-play + PPO schedule at every built-in config's sizes, without a model
 * (docs/spa-schedule.md): the generator's admission rule and the trainer's export cadence must let
 * the run finish, keep every batch within `maxStaleness` versions of the trainer, and never hold
 * the generator back when the version it has would have been fresh enough.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LOOP_CONFIGS, SPA_FULL_SIZE } from '../../loop/configs.js';
import { checkSchedule, oldestAdmissibleVersion } from '../../policies/admission.js';
import { ppoExportDue, simulateSchedule, type SimSchedule, type SimTiming } from './schedule-sim.js';

interface ScheduleCase {
  steps: number;
  exportEvery: number;
  exportSteps: number[];
  trainerVersions: number[];
}
const fixture = JSON.parse(
  readFileSync(new URL('../fixtures/ppo-export-schedule.json', import.meta.url), 'utf8'),
) as { cases: ScheduleCase[] };

/** Generator faster than the trainer, slower, as fast, and a slow export + load. */
const TIMINGS: Readonly<Record<string, SimTiming>> = {
  'fast generator': { generatorBatch: 1, trainerStep: 10, exportAndLoad: 5 },
  'slow generator': { generatorBatch: 10, trainerStep: 1, exportAndLoad: 1 },
  'even pace': { generatorBatch: 5, trainerStep: 5, exportAndLoad: 2 },
  'slow export': { generatorBatch: 1, trainerStep: 1, exportAndLoad: 30 },
};

beforeEach(() => {
  // The follower's wait timer and deadline run on fake time; the simulation's own clock is virtual.
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
});
afterEach(() => {
  vi.useRealTimers();
});

async function expectSound(schedule: SimSchedule): Promise<void> {
  for (const [pace, timing] of Object.entries(TIMINGS)) {
    const run = await simulateSchedule(schedule, timing);
    const where = `${JSON.stringify(schedule)}, ${pace}`;
    expect(run.finished, `${where}: ${run.detail}`).toBe(true);
    const staleness = run.batchVersions.map((v, batch) => run.trainerVersions[batch]! - v);
    expect(Math.max(...staleness), `${where}: most stale batch`).toBeLessThanOrEqual(schedule.maxStaleness);
    expect(Math.min(...staleness), `${where}: a batch newer than the trainer`).toBeGreaterThanOrEqual(0);
    // Every time the generator waited, the version it had would have trained too stale.
    for (const { batch, loaded } of run.waits)
      expect(
        run.trainerVersions[batch]! - loaded,
        `${where}: batch ${batch} waited although v${loaded} was fresh enough`,
      ).toBeGreaterThan(schedule.maxStaleness);
  }
}

describe('the self-play + PPO schedule', () => {
  it.each(Object.keys(LOOP_CONFIGS))('%s at full size finishes within maxStaleness', async (name) => {
    const config = { ...LOOP_CONFIGS[name]!, ...SPA_FULL_SIZE };
    await expectSound({
      steps: config.ppoSteps,
      exportEvery: config.exportEvery,
      maxStaleness: config.maxStaleness,
    });
  });

  it.each(Object.keys(LOOP_CONFIGS))('%s at the default size finishes within maxStaleness', async (name) => {
    const config = LOOP_CONFIGS[name]!;
    await expectSound({
      steps: config.ppoSteps,
      exportEvery: config.exportEvery,
      maxStaleness: config.maxStaleness,
    });
  });

  it('a resumed run (trainer checkpoint after k steps, only the newest version on the topic) stays within maxStaleness', async () => {
    // Counting its batches from 0 again, a resumed generator took the newest version as fresh
    // enough for every batch up to k and ran ahead of the trainer (pc15: staleness 1, 2, … 15).
    for (const exportEvery of [1, 3])
      for (const maxStaleness of [0, 1, 2])
        for (const resumeAfter of [1, 6, 7])
          await expectSound({ steps: 12, exportEvery, maxStaleness, resumeAfter });
  });

  it('finishes for every cadence and staleness bound, synchronous (maxStaleness 0) included', async () => {
    for (const steps of [1, 6, 7, 23])
      for (const exportEvery of [1, 2, 3, 10])
        for (const maxStaleness of [0, 1, 2]) await expectSound({ steps, exportEvery, maxStaleness });
  });

  it("models the trainer's exports as the Python service makes them (shared fixture)", () => {
    for (const { steps, exportEvery, exportSteps, trainerVersions } of fixture.cases) {
      const due = Array.from({ length: steps }, (_, i) => i + 1).filter((n) =>
        ppoExportDue(n, steps, exportEvery),
      );
      expect(due, `steps ${steps}, exportEvery ${exportEvery}`).toEqual(exportSteps);
      // The admission rule's idea of the trainer's version during step b + 1, at staleness 0.
      const admitted = trainerVersions.map((_, batch) =>
        oldestAdmissibleVersion(batch, { startVersion: 1, exportEvery, maxStaleness: 0 }),
      );
      expect(admitted, `steps ${steps}, exportEvery ${exportEvery}`).toEqual(trainerVersions);
    }
  });

  it('refuses a cadence or bound that is not a whole number, naming the field', () => {
    expect(() => checkSchedule({ exportEvery: 0, maxStaleness: 1 })).toThrow(
      'exportEvery must be a positive integer, got 0',
    );
    expect(() => checkSchedule({ exportEvery: 10, maxStaleness: -1 })).toThrow(
      'maxStaleness must be an integer ≥ 0, got -1',
    );
  });
});
