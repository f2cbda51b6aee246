/**
 * The kafkajs wire code spa-stream patches (patches/kafkajs+2.2.4.patch: record and batch
 * encoders sized up front in unfilled memory, gzip in one output chunk, a fetch's batches
 * decompressed side by side) held to bytes kafkajs 2.2.4 wrote as released
 * (test/fixtures/kafkajs/write-golden.ts).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { BATCH_RECORDS, fixtureRecords, produceTopicData } from '../fixtures/kafkajs/records.js';

const require = createRequire(import.meta.url);
interface Encoded {
  readonly buffer: Buffer;
}
type Encode = (options: Record<string, unknown>) => Promise<Encoded> | Encoded;
interface DecodedRecord {
  readonly offset: string;
  readonly key: Buffer;
  readonly value: Buffer;
  readonly headers: Record<string, Buffer>;
}
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0') as { RecordBatch: Encode };
const Record = require('kafkajs/src/protocol/recordBatch/record/v0') as Encode;
const { Types } = require('kafkajs/src/protocol/message/compression') as { Types: Record<string, number> };
const gzip = require('kafkajs/src/protocol/message/compression/gzip') as {
  decompress(buffer: Buffer): Promise<Buffer>;
};
const Decoder = require('kafkajs/src/protocol/decoder') as new (buffer: Buffer) => unknown;
const decodeMessages = require('kafkajs/src/protocol/requests/fetch/v4/decodeMessages') as (
  decoder: unknown,
) => Promise<DecodedRecord[]>;

const Produce = require('kafkajs/src/protocol/requests/produce/v3/request') as (
  options: Record<string, unknown>,
) => { encode(): Promise<Encoded> };

const fixture = (name: string): Buffer =>
  readFileSync(new URL(`../fixtures/kafkajs/${name}`, import.meta.url));

async function encodeBatch(compression: number): Promise<Buffer> {
  const records = await Promise.all(
    fixtureRecords(0).map((r, i) => Record({ offsetDelta: i, timestampDelta: i, ...r })),
  );
  const batch = await RecordBatch({
    compression,
    firstOffset: '0',
    firstTimestamp: 1_700_000_000_000,
    maxTimestamp: 1_700_000_000_000 + BATCH_RECORDS - 1,
    lastOffsetDelta: BATCH_RECORDS - 1,
    records,
  });
  return batch.buffer;
}

/** A fetch's record set (int32 size + batches), as decodeMessages reads it. */
const recordSet = (batches: Buffer): Buffer => {
  const size = Buffer.alloc(4);
  size.writeInt32BE(batches.length);
  return Buffer.concat([size, batches]);
};

const expectFixtureRecords = (records: readonly DecodedRecord[], batches: number): void => {
  const expected = Array.from({ length: batches }, (_, b) => fixtureRecords(b * BATCH_RECORDS)).flat();
  expect(records.map((r) => Number(r.offset))).toEqual(expected.map((_, i) => i));
  records.forEach((record, i) => {
    expect(record.key.equals(expected[i]!.key)).toBe(true);
    expect(record.value.equals(expected[i]!.value)).toBe(true);
    expect(record.headers.traceparent!.equals(expected[i]!.headers.traceparent)).toBe(true);
  });
};

describe('kafkajs record batch encoding (patched)', () => {
  it('writes an uncompressed batch byte for byte as kafkajs 2.2.4 did', async () => {
    expect((await encodeBatch(Types.None!)).equals(fixture('record-batch-none.bin'))).toBe(true);
  });

  it('writes a gzip batch that reads back as its records', async () => {
    const records = await decodeMessages(new Decoder(recordSet(await encodeBatch(Types.GZIP!))));
    expectFixtureRecords(records, 1);
  });
});

/** Topic → partitions in the order a Produce v3 request body holds them, with each batch's bytes. */
function producedBatches(body: Buffer): [string, number, Buffer][] {
  let at = 0;
  const int16 = () => ((at += 2), body.readInt16BE(at - 2));
  const int32 = () => ((at += 4), body.readInt32BE(at - 4));
  const string = () => {
    const length = int16();
    at += Math.max(length, 0);
    return body.toString('utf8', at - Math.max(length, 0), at);
  };
  string(); // transactional id
  int16(); // acks
  int32(); // timeout
  const out: [string, number, Buffer][] = [];
  for (let topics = int32(); topics > 0; topics--) {
    const topic = string();
    for (let partitions = int32(); partitions > 0; partitions--) {
      const partition = int32();
      const size = int32();
      out.push([topic, partition, body.subarray(at, (at += size))]);
    }
  }
  return out;
}

describe('kafkajs produce request encoding (patched)', () => {
  const request = (compression: number) =>
    Produce({ acks: -1, timeout: 30_000, compression, topicData: produceTopicData() }).encode();

  it('writes an uncompressed request byte for byte as kafkajs 2.2.4 did', async () => {
    expect((await request(Types.None!)).buffer.equals(fixture('produce-request-none.bin'))).toBe(true);
  });

  it('keeps topics and partitions in order with their gzip batches compressed side by side', async () => {
    const batches = producedBatches((await request(Types.GZIP!)).buffer);
    const expected = produceTopicData().flatMap(({ topic, partitions }) =>
      partitions.map(({ partition }) => [topic, partition]),
    );
    expect(batches.map(([topic, partition]) => [topic, partition])).toEqual(expected);
    for (const [, partition, batch] of batches) {
      const records = await decodeMessages(new Decoder(recordSet(batch)));
      expect(records.map((r) => r.key.toString())).toEqual(
        fixtureRecords(partition * BATCH_RECORDS).map((r) => r.key.toString()),
      );
    }
  });
});

describe('kafkajs fetch decoding (patched)', () => {
  it('reads the gzip batches kafkajs 2.2.4 wrote, in offset order, and drops a cut-off last batch', async () => {
    expectFixtureRecords(await decodeMessages(new Decoder(fixture('fetch-records-gzip.bin'))), 3);
  });

  it('fails on a corrupt batch instead of skipping it', async () => {
    const set = Buffer.from(fixture('fetch-records-gzip.bin'));
    // The first batch's compressed records start after its 61-byte header (+ int32 count).
    set.fill(0xff, 4 + 61 + 4, 4 + 61 + 40);
    await expect(decodeMessages(new Decoder(set))).rejects.toThrow();
  });
});

describe('kafkajs gzip decompression in one chunk (patched)', () => {
  const large = Buffer.from('spa '.repeat(50_000));
  const small = Buffer.from('stream');

  it('returns the output the trailer announces', async () => {
    for (const data of [large, small, Buffer.alloc(0)])
      expect((await gzip.decompress(gzipSync(data))).equals(data)).toBe(true);
  });

  it('returns every member of a multi-member stream, longer than the last trailer says', async () => {
    const both = Buffer.concat([gzipSync(large), gzipSync(small)]);
    expect((await gzip.decompress(both)).equals(Buffer.concat([large, small]))).toBe(true);
  });
});
