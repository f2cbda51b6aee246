/**
 * Records between the transport's shapes and @platformatic/kafka's, as pure functions: the
 * producer's messages and partitioner, and what a read_committed consumer hands over from a
 * fetched partition (aborted transactions and control markers left out, the next offset to
 * fetch kept).
 */
import { IS_CONTROL, IS_TRANSACTIONAL, compatibilityPartitioner } from '@platformatic/kafka';
import type { MessageToProduce, Partitioner, RecordsBatch } from '@platformatic/kafka';
import type { OutgoingRecord, RecordHeaders } from './transport.js';

/**
 * The partition chooser of kafkajs' DefaultPartitioner (Kafka's Java default): a keyed record goes
 * to `toPositive(murmur2(key)) % partitions` (the library applies the `%`), so a key lands where
 * kafkajs and the Java client put it; a record without a key goes round-robin, one counter per
 * topic. (The library's own default partitioner hashes differently: `murmur2(key) >>> 0`.)
 */
export function kafkajsCompatiblePartitioner(): Partitioner<Buffer, Buffer, Buffer, Buffer> {
  const next = new Map<string, number>();
  return (message, key) => {
    if (key !== undefined) return compatibilityPartitioner(message, key);
    const counter = next.get(message.topic) ?? 0;
    next.set(message.topic, (counter + 1) % 0x7fffffff);
    return counter;
  };
}

/** Our records as the library's messages (header names as Buffers, timestamps as bigint). */
export function toPlatformaticMessages(records: readonly OutgoingRecord[]): MessageToProduce[] {
  return records.map((record) => ({
    topic: record.topic,
    ...(record.key === null ? {} : { key: record.key }),
    // A null value is a tombstone; the library writes null for it, but types the field as Buffer.
    value: record.value as Buffer,
    ...(record.headers === undefined
      ? {}
      : {
          headers: new Map(Object.entries(record.headers).map(([name, value]) => [Buffer.from(name), value])),
        }),
    ...(record.timestamp === undefined ? {} : { timestamp: BigInt(record.timestamp) }),
    ...(record.partition === undefined ? {} : { partition: record.partition }),
  }));
}

/** A record of a fetched partition, before it is given its topic and partition. */
interface FetchedRecord {
  readonly offset: bigint;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: RecordHeaders;
  readonly timestamp: number;
}

/** What one fetched partition holds for a read_committed reader. */
export interface CommittedRecords {
  readonly records: FetchedRecord[];
  /**
   * The offset after the last batch fetched (records, aborted ones and markers alike), where the
   * next fetch starts once every record is taken; undefined when nothing was fetched.
   */
  readonly nextOffset: bigint | undefined;
}

/** An aborted transaction as Fetch reports it: its producer and first offset. */
interface AbortedTransaction {
  readonly producerId: bigint;
  readonly firstOffset: bigint;
}

function headersOf(headers: readonly [Buffer | null, Buffer | null][]): RecordHeaders {
  const out: Record<string, Buffer> = {};
  // A name that occurs twice keeps its last value; a null name or value is left out.
  for (const [name, value] of headers) if (name !== null && value !== null) out[name.toString()] = value;
  return out;
}

/** Whether a control batch is an abort marker (control record key: version int16, type int16; 0 = abort). */
function isAbortMarker(batch: RecordsBatch): boolean {
  const key = batch.records[0]?.key;
  return key !== null && key !== undefined && key.length >= 4 && key.readInt16BE(2) === 0;
}

/**
 * The records a read_committed consumer may see in one partition's fetched batches, at or after
 * `fetchOffset` (a batch can start before it), the way the Java consumer filters them: a
 * transactional batch is dropped while its producer has an aborted transaction open (from the
 * aborted transaction's first offset up to the producer's abort marker), and control batches
 * are never records. The library filters aborted ranges itself, but keeps only one range per
 * producer and none whose abort marker lies past the fetch; this filter is complete on its own.
 */
export function committedRecords(
  batches: readonly RecordsBatch[],
  aborted: readonly AbortedTransaction[],
  fetchOffset: bigint,
): CommittedRecords {
  const pending = [...aborted].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1));
  const abortedProducers = new Set<bigint>();
  const records: FetchedRecord[] = [];
  let nextOffset: bigint | undefined;
  for (const batch of batches) {
    const lastOffset = batch.firstOffset + BigInt(batch.lastOffsetDelta);
    nextOffset = lastOffset + 1n;
    while (pending.length > 0 && pending[0]!.firstOffset <= lastOffset)
      abortedProducers.add(pending.shift()!.producerId);
    if (batch.attributes & IS_CONTROL) {
      if (isAbortMarker(batch)) abortedProducers.delete(batch.producerId);
      continue;
    }
    if (batch.attributes & IS_TRANSACTIONAL && abortedProducers.has(batch.producerId)) continue;
    for (const record of batch.records) {
      const offset = batch.firstOffset + BigInt(record.offsetDelta);
      if (offset < fetchOffset) continue;
      records.push({
        offset,
        key: record.key ?? null,
        value: record.value ?? null,
        headers: headersOf(record.headers),
        timestamp: Number(batch.firstTimestamp + record.timestampDelta),
      });
    }
  }
  return { records, nextOffset };
}
