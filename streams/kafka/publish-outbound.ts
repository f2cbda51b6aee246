import { concatMap, lastValueFrom, tap, type Observable } from 'rxjs';
import { chunkAtTrajectories } from '../../operators/chunk-at-trajectories.js';
import type { Outbound, OutboundTopic } from '../../schemas/outbound.js';
import type { DemandGate } from '../demand-gate.js';
import { toKafkaRecord } from './spa-records.js';
import { withinTopicLimits } from './too-large.js';
import type { RecordSink } from '../../infra/kafka/client/transport.js';

export interface PublishOptions {
  /** Topic name per logical topic. */
  readonly topics: Readonly<Record<OutboundTopic, string>>;
  /**
   * A transaction closes at the first trajectory boundary (a trajectory is never split) once it
   * holds this many records or has been open `transactionMs`. Default {@link TRANSACTION_RECORDS}.
   */
  readonly transactionRecords?: number;
  /** How long a transaction stays open, in ms (see `transactionRecords`). Default {@link TRANSACTION_MS}. */
  readonly transactionMs?: number;
  /**
   * How long a transaction stays open with no new record, in ms: a generator that pauses (for its
   * policy, or for Kafka) has what it wrote so far committed without waiting out `transactionMs`.
   * Default {@link TRANSACTION_IDLE_MS}.
   */
  readonly transactionIdleMs?: number;
  /** Called after each committed transaction with its records (a too-large one as its dead letter). */
  readonly onCommitted?: (records: readonly Outbound[]) => void;
  /**
   * Backpressure to the episode loop: records count as in flight from arrival until their
   * transaction commits. A limit below `transactionRecords` closes transactions on time only.
   */
  readonly gate?: DemandGate;
  /**
   * The `traceparent` header of each record (headers carry the episode's trace context); the
   * compositions pass its episode's, `outboundTraceparent` (streams/telemetry/episode-key.ts).
   * Default: no header.
   */
  readonly traceparent?: (outbound: Outbound) => string | undefined;
}

/**
 * Records at which a transaction closes. Fewer, larger transactions amortise each one's fixed
 * round trips (AddPartitionsToTxn, EndTxn, the markers); the bound keeps what a retried
 * transaction resends, and what waits in memory, to a few MB.
 */
const TRANSACTION_RECORDS = 1024;
/**
 * How long a transaction stays open: records are visible to read_committed consumers within
 * about this much of being produced (bench/kafka.ts runs ProducerPerformance with the same 100 ms).
 */
export const TRANSACTION_MS = 100;
/**
 * A pause in the generator's output that closes a transaction early. A model-driven generator
 * writes a batch's trajectories in a burst at the end of a turn and then nothing for the next
 * policy call; without it each burst's records would wait out the rest of TRANSACTION_MS before
 * a trainer could read them (bench/freshness.ts). A generator running flat out pauses only when
 * Kafka is behind, and then its transaction is full anyway.
 */
const TRANSACTION_IDLE_MS = 10;

/**
 * Publishes the generator's records to Kafka, one transaction per chunk (chunkAtTrajectories):
 * a trajectory's raw record, its SFT rows or rollout and its rejects become visible together
 * to read_committed consumers. A record its topic cannot take is written as its `too-large` dead
 * letter instead (too-large.ts) and counted under `dlq`. One transaction in flight at a time (concatMap); with a `gate`
 * the episode loop blocks while records wait for Kafka, so nothing queues without bound.
 * Resolves with records written per topic.
 */
export async function publishOutbound(
  source: Observable<Outbound>,
  sink: RecordSink,
  options: PublishOptions,
): Promise<Record<OutboundTopic, number>> {
  const counts: Record<OutboundTopic, number> = { trajectories: 0, sft: 0, rollouts: 0, dlq: 0 };
  const bounds = {
    records: options.transactionRecords ?? TRANSACTION_RECORDS,
    ms: options.transactionMs ?? TRANSACTION_MS,
    idleMs: options.transactionIdleMs ?? TRANSACTION_IDLE_MS,
  };
  for (const [name, value] of [
    ['transactionMs', bounds.ms],
    ['transactionIdleMs', bounds.idleMs],
  ] as const)
    if (!(value > 0 && Number.isFinite(value)))
      throw new RangeError(`${name} ${value} must be a finite number of ms > 0`);
  await lastValueFrom(
    source.pipe(
      tap(() => options.gate?.add()),
      chunkAtTrajectories(bounds),
      concatMap(async (chunk) => {
        const outgoing = chunk.map((outbound) => ({
          outbound,
          record: toKafkaRecord(outbound, options.topics[outbound.topic], options.traceparent?.(outbound)),
        }));
        // A record its topic cannot take goes to the DLQ as `too-large`; the rest are written.
        const fitted = await withinTopicLimits(sink, outgoing, options.topics.dlq);
        await sink.transaction((tx) => tx.send(fitted.map((item) => item.record)));
        const written = fitted.map((item) => item.outbound);
        for (const o of written) counts[o.topic]++;
        options.gate?.done(chunk.length);
        options.onCommitted?.(written);
      }),
    ),
    { defaultValue: undefined },
  );
  return counts;
}
