import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import { chunkAtTrajectories } from '../../operators/chunk-at-trajectories.js';
import type { Outbound } from '../../schemas/outbound.js';

const rec = (topic: 'trajectories' | 'sft', key: string) =>
  ({ topic, key, record: {} }) as unknown as Outbound;

describe('chunkAtTrajectories', () => {
  it('closes a chunk before the next trajectory once it has enough records, never splitting one', () => {
    new TestScheduler((a, e) => expect(a).toEqual(e)).run(({ cold, expectObservable }) => {
      const t1 = rec('trajectories', 'a');
      const r1 = rec('sft', 'a');
      const r2 = rec('sft', 'a');
      const t2 = rec('trajectories', 'b');
      const r3 = rec('sft', 'b');
      const source = cold('a-b-c-d-e|', { a: t1, b: r1, c: r2, d: t2, e: r3 });
      // Microtask flushes happen between virtual frames too, so chunks close at the burst end.
      expectObservable(source.pipe(chunkAtTrajectories(10))).toBe('---------(x|)', {
        x: [t1, r1, r2, t2, r3],
      });
      expectObservable(source.pipe(chunkAtTrajectories(2))).toBe('------x--(y|)', {
        x: [t1, r1, r2],
        y: [t2, r3],
      });
    });
  });

  it('closes a chunk that has been open `ms` between bursts, on virtual time', () => {
    new TestScheduler((a, e) => expect(a).toEqual(e)).run(({ cold, expectObservable }) => {
      const t1 = rec('trajectories', 'a');
      const r1 = rec('sft', 'a');
      const t2 = rec('trajectories', 'b');
      const source = cold('ab 198ms c|', { a: t1, b: r1, c: t2 });
      expectObservable(source.pipe(chunkAtTrajectories({ records: 10, ms: 100 }))).toBe(
        '100ms x 100ms (y|)',
        {
          x: [t1, r1],
          y: [t2],
        },
      );
      // Without a time bound a chunk short of `records` waits for more (here: the end).
      expectObservable(source.pipe(chunkAtTrajectories({ records: 10 }))).toBe('201ms (x|)', {
        x: [t1, r1, t2],
      });
    });
  });

  it('closes a chunk that has had no new record for `idleMs`, and at `ms` while records keep coming', () => {
    new TestScheduler((a, e) => expect(a).toEqual(e)).run(({ cold, expectObservable }) => {
      const [t1, t2, t3, t4] = ['a', 'b', 'c', 'd'].map((key) => rec('trajectories', key)) as [
        Outbound,
        Outbound,
        Outbound,
        Outbound,
      ];
      const r1 = rec('sft', 'a');
      // t1 r1 at 0–1 ms, then quiet: the chunk closes 20 ms after r1. t2 t3 t4 arrive 15 ms
      // apart, never quiet for 20 ms: their chunk closes at `ms` (50 ms after t2), on a boundary.
      const source = cold('ab 38ms c 14ms d 14ms e 60ms |', { a: t1, b: r1, c: t2, d: t3, e: t4 });
      expectObservable(source.pipe(chunkAtTrajectories({ records: 10, ms: 50, idleMs: 20 }))).toBe(
        '21ms x 68ms y 40ms |',
        { x: [t1, r1], y: [t2, t3, t4] },
      );
    });
  });
});
