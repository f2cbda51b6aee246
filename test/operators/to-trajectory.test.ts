import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { toTrajectory } from '../../operators/to-trajectory.js';
import { step } from './fixtures.js';

const scheduler = () => new TestScheduler((actual, expected) => expect(actual).toEqual(expected));

describe('toTrajectory', () => {
  it('emits a trajectory exactly when its final turn arrives, interleaved slots kept apart', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const a1 = step('g/m0', 1, false);
      const b1 = step('g/m1', 1, true, { slot: 1 });
      const a2 = step('g/m0', 2, true);
      const source = cold('a-b--c|', { a: a1, b: b1, c: a2 });
      const ids = source.pipe(toTrajectory(() => 0));
      expectObservable(ids).toBe('--x--y|', {
        x: expect.objectContaining({ trajectory_id: 'g/m1', states: ['S0', 'S1'] }),
        y: expect.objectContaining({ trajectory_id: 'g/m0', states: ['S0', 'S1', 'S2'], num_actions: 2 }),
      });
    });
  });

  it('errors when the stream ends with an unfinished trajectory instead of dropping it', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const source = cold('a|', { a: step('g/m0', 1, false) });
      expectObservable(source.pipe(toTrajectory(() => 0))).toBe(
        '-#',
        undefined,
        new Error('episode stream ended with 1 unfinished trajectories: g/m0'),
      );
    });
  });

  it('builds the update conversation: ends with the last assistant turn, earlier rewards included', () => {
    scheduler().run(({ cold, expectObservable }) => {
      const source = cold('(ab|)', {
        a: step('g/m0', 1, false, { rewardText: '-0.2' }),
        b: step('g/m0', 2, true),
      });
      expectObservable(source.pipe(toTrajectory(() => 7))).toBe('(x|)', {
        x: expect.objectContaining({
          created_at: 7,
          total_reward: -0.2,
          messages: [
            expect.objectContaining({ role: 'system' }),
            expect.objectContaining({
              role: 'user',
              content: expect.stringContaining('PREFIX\nTurn 1:\nState:\nS0\nYou have 10 actions left.'),
            }),
            expect.objectContaining({ role: 'assistant' }),
            expect.objectContaining({
              role: 'user',
              content: expect.stringMatching(
                /^Reward:\n-0\.2\n\nTurn 2:\nState:\nS1\nYou have 9 actions left\./,
              ),
            }),
            expect.objectContaining({ role: 'assistant' }),
          ],
        }),
      });
    });
  });
});
