/**
 * Issue 44 item 4: `spa eval --policy latest --run <id>` evaluates the model the summary's
 * reproduce line (`--policy onnx:<final folder>`) does. It read the finished run's policy topic
 * from its start and loaded every version in turn; each reload offsets the sampling seed
 * (policies/resolve.ts), so the final version played with another seed than the reproduce line's
 * (Pass@1 0.0 ± 0.0 against 6.3 ± 4.3). Versions offered together now load the newest alone.
 */
import { describe, expect, it } from 'vitest';
import type { Policy } from '../../policies/policy.js';
import { SwappingPolicy } from '../../policies/swapping-policy.js';
import type { PolicyUpdate } from '../../schemas/index.js';

const update = (version: number): PolicyUpdate => ({
  version,
  uri: `/runs/r/policies/v${version}`,
  sha256: 'ab'.repeat(32),
  stage: version === 1 ? 'sft' : 'ppo',
  step: version,
  model: 'tiny-local',
  format: 'onnx',
  created_at: 0,
});

/** A follower whose loads are recorded as (version, load number): the seed offset resolve.ts gives. */
function follower() {
  const loads: [version: number, load: number][] = [];
  const policy = new SwappingPolicy({
    origin: 'spa.r.policy',
    load: async (u) => {
      loads.push([u.version, loads.length]);
      return { name: `onnx:v${u.version}`, version: u.version, act: async () => [] } satisfies Policy;
    },
    log: () => {},
  });
  return { policy, loads };
}

describe('SwappingPolicy given a finished run’s versions at once', () => {
  it('loads the newest as its first load and hands it to the first batch', async () => {
    const { policy, loads } = follower();
    for (const v of [1, 2, 3]) policy.offer(update(v)); // one fetch of the compacted topic
    const first = await policy.next();
    expect(first.version).toBe(3);
    expect(loads).toEqual([[3, 0]]); // seed offset 0: as `--policy onnx:<v3 folder>`
    await policy.close();
  });

  it('still loads each version that arrives later, one after the other', async () => {
    const { policy, loads } = follower();
    policy.offer(update(1));
    expect((await policy.next()).version).toBe(1);
    policy.offer(update(2));
    await policy.waitForVersion(2, 1000);
    policy.offer(update(2)); // a repeat loads nothing
    policy.offer(update(3));
    await policy.waitForVersion(3, 1000);
    expect(loads).toEqual([
      [1, 0],
      [2, 1],
      [3, 2],
    ]);
    await policy.close();
  });
});
