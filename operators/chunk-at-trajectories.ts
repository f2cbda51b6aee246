import {
  asyncScheduler,
  Observable,
  type OperatorFunction,
  type SchedulerLike,
  type Subscription,
} from 'rxjs';
import type { Outbound } from '../schemas/outbound.js';

/** When a chunk closes: at the first trajectory boundary once either bound is reached. */
export interface ChunkBounds {
  /** Records a chunk holds before it closes. */
  readonly records: number;
  /** How long a chunk stays open, from its first record, before it closes. Default: no bound. */
  readonly ms?: number;
  /**
   * How long a chunk stays open with no new record: a generator that pauses (for its policy,
   * or for the sink) gets what it has so far sent without waiting out `ms`. Default: no bound.
   */
  readonly idleMs?: number;
}

/**
 * Groups the generator's outbound records into chunks that never split one trajectory's records
 * (its raw trajectory, SFT rows or rollout, rejects): a chunk closes once it holds at least
 * `records`, or has been open `ms`, or has had no new record for `idleMs` — just before the next
 * raw trajectory, at the end of the current synchronous burst, or when its time is up between
 * bursts (the generator pipeline emits
 * all of a trajectory's records in one burst, so a burst ends on a trajectory boundary). A chunk
 * is one Kafka transaction, so a trajectory's outputs land together or not at all. Buffer bound:
 * `records` plus one burst; it never waits for more input once it has enough, so an upstream
 * that blocks on the sink cannot deadlock it. `scheduler` keeps the time (virtual in tests).
 */
export function chunkAtTrajectories(
  bounds: number | ChunkBounds,
  scheduler: SchedulerLike = asyncScheduler,
): OperatorFunction<Outbound, Outbound[]> {
  const {
    records,
    ms = Infinity,
    idleMs = Infinity,
  } = typeof bounds === 'number' ? { records: bounds } : bounds;
  return (source) =>
    new Observable<Outbound[]>((subscriber) => {
      let chunk: Outbound[] = [];
      let openedAt = 0;
      let lastAt = 0;
      let timer: Subscription | undefined;
      let flushScheduled = false;
      const due = () => chunk.length >= records || scheduler.now() - openedAt >= ms;
      const flush = () => {
        timer?.unsubscribe();
        timer = undefined;
        if (chunk.length === 0) return;
        subscriber.next(chunk);
        chunk = [];
      };
      // One timer per open chunk, for the earlier of its two deadlines; it fires between
      // bursts, so on a trajectory boundary.
      const arm = () => {
        const deadline = Math.min(openedAt + ms, lastAt + idleMs);
        if (Number.isFinite(deadline))
          timer = scheduler.schedule(check, Math.max(0, deadline - scheduler.now()));
      };
      const check = () => {
        timer = undefined;
        if (subscriber.closed || chunk.length === 0) return;
        if (due() || scheduler.now() - lastAt >= idleMs) flush();
        else arm();
      };
      const subscription = source.subscribe({
        next(outbound) {
          if (outbound.topic === 'trajectories' && chunk.length > 0 && due()) flush();
          lastAt = scheduler.now();
          if (chunk.length === 0) {
            openedAt = lastAt;
            arm();
          }
          chunk.push(outbound);
          if (!flushScheduled) {
            flushScheduled = true;
            queueMicrotask(() => {
              flushScheduled = false;
              if (chunk.length > 0 && due() && !subscriber.closed) flush();
            });
          }
        },
        error: (error: unknown) => subscriber.error(error),
        complete() {
          flush();
          subscriber.complete();
        },
      });
      subscription.add(() => timer?.unsubscribe());
      return subscription;
    });
}
