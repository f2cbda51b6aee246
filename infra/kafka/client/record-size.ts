/**
 * How large the record batches of a send are, so that a sink never asks a broker to take more than
 * a topic's `max.message.bytes`. The broker checks that limit per record batch (one per partition
 * in a produce request, compressed as sent), not per record: two records of 0.6 MB in one batch are
 * refused together (MESSAGE_TOO_LARGE), although each alone fits. So a sink cuts a send into
 * requests whose batches fit ({@link chunkWithinLimits}), and a record that does not fit even alone
 * ({@link batchBytesAlone} over the limit) is not sent at all.
 *
 * The sizes are upper bounds of Kafka's record batch v2 layout: its 61-byte header, each record's
 * varint framing at its widest, and for gzip the most deflate can add to incompressible bytes. A
 * record whose raw size is over the limit is measured compressed (gzip here, as kafkajs does), with
 * room for the framing deflate may add.
 */
import { gzipSync } from 'node:zlib';
import type { OutgoingRecord } from './transport.js';

/** Kafka's default `message.max.bytes` (and so every topic's `max.message.bytes` unless set). */
export const KAFKA_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

/** The batch header before the records (base offset … record count). */
const BATCH_HEADER = 61;
/** A record's framing at its widest: length, attributes, timestamp and offset deltas, key and value lengths, header count. */
const RECORD_FRAMING = 5 + 1 + 10 + 5 + 5 + 5 + 5;
/** A header's two varint lengths at their widest. */
const HEADER_FRAMING = 10;

/** The compression a sink sends its batches with. */
export type BatchCompression = 'none' | 'gzip';

/** The bytes of `record` in a batch, uncompressed, framing at its widest. */
function recordBytes(record: OutgoingRecord): number {
  let bytes = RECORD_FRAMING + (record.key?.length ?? 0) + (record.value?.length ?? 0);
  for (const [name, value] of Object.entries(record.headers ?? {}))
    bytes += HEADER_FRAMING + Buffer.byteLength(name) + value.length;
  return bytes;
}

/**
 * The most a batch of `raw` uncompressed record bytes takes on the wire: deflate adds at most 5
 * bytes per 16 KiB it cannot compress (zlib's deflateBound is tighter), gzip 18, and 32 to spare.
 */
function batchBound(raw: number, compression: BatchCompression): number {
  return BATCH_HEADER + (compression === 'gzip' ? raw + 5 * Math.ceil(raw / 16_383) + 50 : raw);
}

/**
 * The size of a batch holding `record` alone. Gzip: the raw bound, or when that is over `limit`
 * (the only case where it matters), the record's bytes compressed plus the framing uncompressed.
 */
export function batchBytesAlone(
  record: OutgoingRecord,
  compression: BatchCompression,
  limit: number,
): number {
  const raw = recordBytes(record);
  const bound = batchBound(raw, compression);
  if (compression === 'none' || bound <= limit) return bound;
  const parts = [record.key ?? Buffer.alloc(0), record.value ?? Buffer.alloc(0)];
  for (const [name, value] of Object.entries(record.headers ?? {})) parts.push(Buffer.from(name), value);
  const framing = raw - parts.reduce((sum, part) => sum + part.length, 0);
  return Math.min(bound, batchBound(0, 'gzip') + gzipSync(Buffer.concat(parts)).length + framing);
}

/**
 * `records` cut, in order, into runs each sendable as one request: no partition's batch of a run
 * exceeds its topic's limit. A record without a `partition` counts against its topic's whole share
 * of the run (its partition is any of them). A record too large to share a batch goes alone;
 * whether it fits even then is {@link batchBytesAlone}'s question.
 */
export function chunkWithinLimits(
  records: readonly OutgoingRecord[],
  limitOf: (topic: string) => number,
  compression: BatchCompression,
): OutgoingRecord[][] {
  const chunks: OutgoingRecord[][] = [];
  let chunk: OutgoingRecord[] = [];
  let bytesOf = new Map<string, number>();
  const close = () => {
    if (chunk.length > 0) chunks.push(chunk);
    chunk = [];
    bytesOf = new Map();
  };
  for (const record of records) {
    const bytes = recordBytes(record);
    const limit = limitOf(record.topic);
    if (batchBound(bytes, compression) > limit) {
      close();
      chunks.push([record]);
      continue;
    }
    // A placed record's batch holds its partition's records and, at worst, every unplaced one; an
    // unplaced record may land anywhere, so it is bounded by the topic's whole share.
    const unplaced = `${record.topic}\u0000`;
    const own = record.partition === undefined ? unplaced : `${record.topic}\u0000${record.partition}`;
    const sharing = (key: string): number => bytesOf.get(key) ?? 0;
    const before = record.partition === undefined ? sharing(record.topic) : sharing(own) + sharing(unplaced);
    if (batchBound(before + bytes, compression) > limit) close();
    chunk.push(record);
    for (const key of [record.topic, own]) bytesOf.set(key, sharing(key) + bytes);
  }
  close();
  return chunks;
}
