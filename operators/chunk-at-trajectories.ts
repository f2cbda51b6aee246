import { Observable, type OperatorFunction } from 'rxjs';
import type { Outbound } from '../schemas/outbound.js';

/**
 * Groups the generator's outbound records into chunks that never split one trajectory's records
 * (its raw trajectory, SFT rows or rollout, rejects): a chunk closes once it holds at least
 * `minRecords` — just before the next raw trajectory, or at the end of the current synchronous
 * burst (the generator pipeline emits all of a trajectory's records in one burst, so a burst ends
 * on a trajectory boundary). A chunk is one Kafka transaction, so a trajectory's outputs land
 * together or not at all. Buffer bound: `minRecords` plus one burst; it never waits for more input
 * once it has enough, so an upstream that blocks on the sink cannot deadlock it.
 */
export function chunkAtTrajectories(minRecords: number): OperatorFunction<Outbound, Outbound[]> {
  return (source) =>
    new Observable<Outbound[]>((subscriber) => {
      let chunk: Outbound[] = [];
      let flushScheduled = false;
      const flush = () => {
        if (chunk.length === 0) return;
        subscriber.next(chunk);
        chunk = [];
      };
      const subscription = source.subscribe({
        next(outbound) {
          if (outbound.topic === 'trajectories' && chunk.length >= minRecords) flush();
          chunk.push(outbound);
          if (!flushScheduled) {
            flushScheduled = true;
            queueMicrotask(() => {
              flushScheduled = false;
              if (chunk.length >= minRecords && !subscriber.closed) flush();
            });
          }
        },
        error: (error: unknown) => subscriber.error(error),
        complete() {
          flush();
          subscriber.complete();
        },
      });
      return subscription;
    });
}
