import { concatMap, lastValueFrom, tap } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { envFactory } from '../../envs/registry.js';
import { DemandGate } from '../../streams/demand-gate.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { generatorPipeline } from '../../streams/generator-pipeline.js';
import { randomPolicy } from '../../policies/random-policy.js';

describe('DemandGate', () => {
  it('ready() waits while more than `limit` records are in flight', async () => {
    const gate = new DemandGate(2);
    gate.add(3);
    let released = false;
    const waiting = gate.ready().then(() => (released = true));
    await Promise.resolve();
    expect(released).toBe(false);
    gate.done(1);
    await waiting;
    expect(released).toBe(true);
  });

  it('keeps the episode loop from running ahead of a slow sink', async () => {
    const gate = new DemandGate(8);
    const config = episodeConfig({ env: 'sokoban', groups: 4, groupSize: 2, batches: 4, runId: 'g' });
    let maxInFlight = 0;
    await lastValueFrom(
      generatorPipeline(config, envFactory({ name: 'sokoban' }), randomPolicy({ seed: 1 }), {
        target: 'sft',
        gate,
      }).pipe(
        tap(() => {
          gate.add();
          maxInFlight = Math.max(maxInFlight, gate.pending);
        }),
        concatMap(async () => {
          await new Promise((resolve) => setTimeout(resolve, 1));
          gate.done();
        }),
      ),
    );
    // One turn of one batch (8 slots: at most 8 trajectories' outputs) may arrive past the limit.
    expect(maxInFlight).toBeLessThanOrEqual(8 + 8 * 6);
    expect(gate.pending).toBe(0);
  });
});
