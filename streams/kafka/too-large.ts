/**
 * Records their topic cannot take, dead-lettered instead of stalling the stream: every producer of
 * the pipeline (the generator's `publishOutbound`, `spa replay`) asks its sink which records of a
 * transaction are over their topic's `max.message.bytes` (`RecordSink.oversized`) and sends each of
 * those as a `too-large` dead letter instead. The dead letter must fit the dead-letter topic too, so
 * it carries the record's first {@link TOO_LARGE_PAYLOAD_BYTES} bytes (fewer when that topic's limit
 * is lower, none when even that fails), and its detail says which.
 */
import type { Rejected } from '../../schemas/index.js';
import type { Outbound } from '../../schemas/outbound.js';
import { toKafkaRecord } from './spa-records.js';
import type { OutgoingRecord, OversizedRecord, RecordSink } from '../../infra/kafka/client/transport.js';
import { headerNames } from './headers.js';

/** Bytes of an oversized record a `too-large` dead letter keeps (its Avro frame's start). */
const TOO_LARGE_PAYLOAD_BYTES = 64 * 1024;
/** Room left in the dead-letter topic's limit for the dead letter's other fields and framing. */
const DEAD_LETTER_ROOM = 4096;

/** A record on its way to a sink: what it is, its Kafka form, and what it was made from. */
export interface OutgoingOutbound {
  readonly outbound: Outbound;
  readonly record: OutgoingRecord;
  /** Where it came from, e.g. `spa.trajectories[0]@17` (a replayed record); default: its topic. */
  readonly source?: string;
}

const count = (n: number): string => n.toLocaleString('en-US');

/** What a record is, in a dead letter's detail: a dead letter too large keeps its own reason there. */
const what = (outbound: Outbound): string =>
  outbound.topic === 'dlq' ? `dead letter (${outbound.record.reason})` : `${outbound.topic} record`;

/** The `too-large` dead letter of `item`, keeping `keep` bytes of its value. */
function deadLetter(item: OutgoingOutbound, over: OversizedRecord, keep: number, now: number): Rejected {
  const value = item.record.value ?? Buffer.alloc(0);
  const kept = value.subarray(0, keep);
  const payload =
    kept.length === value.length
      ? 'payload whole'
      : kept.length > 0
        ? `payload truncated to its first ${count(kept.length)} of ${count(value.length)} bytes`
        : `payload omitted (${count(value.length)} bytes)`;
  const framed = value.length >= 10 && value[0] === 0xc3 && value[1] === 0x01;
  return {
    key: item.outbound.key,
    source: item.source ?? over.topic,
    reason: 'too-large',
    detail:
      `a ${what(item.outbound)} of ${count(over.bytes)} bytes (compressed as sent) is over ` +
      `${over.topic}'s max.message.bytes ${count(over.limit)}; ${payload}`,
    payload: Buffer.from(kept),
    payload_fingerprint: framed ? Buffer.from(value.subarray(2, 10)) : null,
    created_at: now,
  };
}

/** `rejected` as a record of the dead-letter topic, with the original's traceparent. */
function deadLetterRecord(item: OutgoingOutbound, rejected: Rejected, dlqTopic: string): OutgoingOutbound {
  const outbound: Outbound = { topic: 'dlq', key: item.outbound.key, record: rejected };
  const traceparent = item.record.headers?.[headerNames.traceparent]?.toString('utf8');
  return { outbound, record: toKafkaRecord(outbound, dlqTopic, traceparent), source: item.source };
}

/**
 * The dead letter of an oversized `item` that the dead-letter topic takes: the first
 * {@link TOO_LARGE_PAYLOAD_BYTES} of its value, else as many as the topic's limit leaves room for,
 * else none. Throws when the dead-letter topic cannot take even that (a limit of a few KiB).
 */
async function fittingDeadLetter(
  sink: RecordSink,
  item: OutgoingOutbound,
  over: OversizedRecord,
  dlqTopic: string,
  now: number,
): Promise<OutgoingOutbound> {
  let keep = TOO_LARGE_PAYLOAD_BYTES;
  for (;;) {
    const letter = deadLetterRecord(item, deadLetter(item, over, keep, now), dlqTopic);
    const [tooLarge] = await sink.oversized([letter.record]);
    if (!tooLarge) return letter;
    if (keep === 0)
      throw new Error(
        `the dead letter of a too-large record is itself over ${dlqTopic}'s max.message.bytes ` +
          `${count(tooLarge.limit)} without its payload; raise that topic's limit`,
      );
    keep = Math.max(0, Math.min(keep - 1, tooLarge.limit - DEAD_LETTER_ROOM));
  }
}

/**
 * `items` as the sink can send them: each record its topic cannot take replaced, in place, by its
 * `too-large` dead letter for `dlqTopic`. Sends nothing.
 */
export async function withinTopicLimits(
  sink: RecordSink,
  items: readonly OutgoingOutbound[],
  dlqTopic: string,
  now = Date.now(),
): Promise<OutgoingOutbound[]> {
  const oversized = await sink.oversized(items.map((item) => item.record));
  if (oversized.length === 0) return [...items];
  const fitted = [...items];
  for (const over of oversized)
    fitted[over.index] = await fittingDeadLetter(sink, items[over.index]!, over, dlqTopic, now);
  return fitted;
}
