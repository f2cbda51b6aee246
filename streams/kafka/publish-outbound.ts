import { concatMap, lastValueFrom, tap, type Observable } from 'rxjs';
import { chunkAtTrajectories } from '../../operators/chunk-at-trajectories.js';
import type { Outbound, OutboundTopic } from '../../schemas/outbound.js';
import type { DemandGate } from '../demand-gate.js';
import { toKafkaRecord } from './spa-records.js';
import type { RecordSink } from './transport.js';

export interface PublishOptions {
  /** Topic name per logical topic. */
  readonly topics: Readonly<Record<OutboundTopic, string>>;
  /** Smallest transaction, in records (a trajectory is never split). Default 64. */
  readonly minRecordsPerTransaction?: number;
  /** Called after each committed transaction with its records. */
  readonly onCommitted?: (records: readonly Outbound[]) => void;
  /**
   * Backpressure to the episode loop: records count as in flight from arrival until their
   * transaction commits. Its limit must be at least `minRecordsPerTransaction`.
   */
  readonly gate?: DemandGate;
  /**
   * The `traceparent` header of each record (design: Topics, headers carry traceparent); the
   * compositions pass its episode's, `outboundTraceparent` (streams/telemetry/episode-key.ts).
   * Default: no header.
   */
  readonly traceparent?: (outbound: Outbound) => string | undefined;
}

/**
 * Publishes the generator's records to Kafka, one transaction per chunk (chunkAtTrajectories):
 * a trajectory's raw record, its SFT rows or rollout and its rejects become visible together
 * to read_committed consumers. One transaction in flight at a time (concatMap); with a `gate`
 * the episode loop blocks while records wait for Kafka, so nothing queues without bound.
 * Resolves with records written per topic.
 */
export async function publishOutbound(
  source: Observable<Outbound>,
  sink: RecordSink,
  options: PublishOptions,
): Promise<Record<OutboundTopic, number>> {
  const counts: Record<OutboundTopic, number> = { trajectories: 0, sft: 0, rollouts: 0, dlq: 0 };
  const minRecords = options.minRecordsPerTransaction ?? 64;
  if (options.gate && options.gate.limit < minRecords) {
    throw new RangeError(`gate limit ${options.gate.limit} must be ≥ minRecordsPerTransaction ${minRecords}`);
  }
  await lastValueFrom(
    source.pipe(
      tap(() => options.gate?.add()),
      chunkAtTrajectories(minRecords),
      concatMap(async (chunk) => {
        const records = chunk.map((o) => toKafkaRecord(o, options.topics[o.topic], options.traceparent?.(o)));
        await sink.transaction((tx) => tx.send(records));
        for (const o of chunk) counts[o.topic]++;
        options.gate?.done(chunk.length);
        options.onCommitted?.(chunk);
      }),
    ),
    { defaultValue: undefined },
  );
  return counts;
}
