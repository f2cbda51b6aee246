/**
 * An RxJS view of a {@link RecordSource}: an Observable of records, each with an `ack` to
 * call when downstream is done with it. Backpressure policy: **block** — at most
 * `maxInFlight` records are emitted and not yet acked; when the limit is reached the
 * record's partition is paused and the rest of its batch is left in Kafka (fetched again on
 * resume), so nothing is buffered here. Partitions resume once in-flight records drop to
 * `resumeAt`. Offsets are not committed here: the consumer commits when it has made its
 * work durable (design: Contracts).
 */
import { Observable } from 'rxjs';
import type {
  ConsumedBatch,
  ConsumedRecord,
  RecordSource,
  TopicPartition,
} from '../../infra/kafka/client/transport.js';

/** A record handed downstream; call `ack` once, when its processing is finished. */
export interface InFlightRecord {
  readonly record: ConsumedRecord;
  ack(): void;
}

/** Bounds on in-flight work. */
export interface RecordStreamOptions {
  readonly maxInFlight: number;
  /** Resume paused partitions when in-flight records fall to this. Default maxInFlight / 2. */
  readonly resumeAt?: number;
}

/**
 * Runs the source on subscribe and closes it on unsubscribe. Errors that stop the source
 * end the Observable with that error.
 */
export function recordStream(source: RecordSource, options: RecordStreamOptions): Observable<InFlightRecord> {
  const { maxInFlight } = options;
  if (!Number.isInteger(maxInFlight) || maxInFlight < 1)
    throw new Error(`maxInFlight=${maxInFlight} must be an integer >= 1`);
  const resumeAt = options.resumeAt ?? Math.floor(maxInFlight / 2);
  return new Observable<InFlightRecord>((subscriber) => {
    let inFlight = 0;
    const paused = new Map<string, TopicPartition>();
    const release = (): void => {
      inFlight -= 1;
      if (paused.size > 0 && inFlight <= resumeAt) {
        source.resume([...paused.values()]);
        paused.clear();
      }
    };
    const handler = async (batch: ConsumedBatch): Promise<{ taken: number }> => {
      let taken = 0;
      for (const record of batch.records) {
        if (subscriber.closed) break;
        if (inFlight >= maxInFlight) {
          const partition = { topic: batch.topic, partition: batch.partition };
          paused.set(`${batch.topic}/${batch.partition}`, partition);
          source.pause([partition]);
          break;
        }
        inFlight += 1;
        let acked = false;
        taken += 1;
        subscriber.next({ record, ack: () => (acked ? undefined : ((acked = true), release())) });
      }
      return { taken };
    };
    source
      .run(handler, (error) => subscriber.error(error))
      .catch((error: unknown) => subscriber.error(error));
    return () => {
      void source.close().catch(() => undefined);
    };
  });
}
