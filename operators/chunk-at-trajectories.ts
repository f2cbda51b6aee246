import { Observable, type OperatorFunction } from 'rxjs';
import type { Outbound } from '../streams/outbound.js';

/**
 * Groups the generator's outbound records into chunks that never split one trajectory's
 * records (its raw trajectory, SFT rows or rollout, rejects): a chunk closes just before a new
 * raw trajectory once it holds at least `minRecords`. A chunk is one Kafka transaction, so a
 * trajectory's outputs land together or not at all. Buffer bound: `minRecords` plus one
 * trajectory's outputs.
 */
export function chunkAtTrajectories(minRecords: number): OperatorFunction<Outbound, Outbound[]> {
  return (source) =>
    new Observable<Outbound[]>((subscriber) => {
      let chunk: Outbound[] = [];
      return source.subscribe({
        next(outbound) {
          if (outbound.topic === 'trajectories' && chunk.length >= minRecords) {
            subscriber.next(chunk);
            chunk = [];
          }
          chunk.push(outbound);
        },
        error: (error: unknown) => subscriber.error(error),
        complete() {
          if (chunk.length > 0) subscriber.next(chunk);
          subscriber.complete();
        },
      });
    });
}
