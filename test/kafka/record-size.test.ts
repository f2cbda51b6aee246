/**
 * How a sink cuts a send into requests (infra/kafka/client/record-size.ts): each partition's batch
 * within its topic's limit, so a transaction's records spread over partitions go in one request.
 */
import { describe, expect, it } from 'vitest';
import { chunkWithinLimits } from '../../infra/kafka/client/record-size.js';
import type { OutgoingRecord } from '../../infra/kafka/client/transport.js';

const LIMIT = 1_000_000;
const record = (partition: number | undefined, bytes = 400_000, topic = 't'): OutgoingRecord => ({
  topic,
  key: Buffer.from('k'),
  value: Buffer.alloc(bytes),
  ...(partition === undefined ? {} : { partition }),
});
const sizes = (records: readonly OutgoingRecord[]) =>
  chunkWithinLimits(records, () => LIMIT, 'gzip').map((chunk) => chunk.length);

describe('chunkWithinLimits', () => {
  it('sends records of different partitions together, each partition within the limit', () => {
    expect(sizes([0, 1, 2, 0, 1, 2].map((p) => record(p)))).toEqual([6]);
  });

  it('cuts where one partition would go over the limit', () => {
    expect(sizes([0, 0, 0, 1].map((p) => record(p)))).toEqual([2, 2]);
  });

  it("bounds unplaced records by their topic's whole share, as any partition may take them", () => {
    expect(sizes([undefined, undefined, undefined].map((p) => record(p)))).toEqual([2, 1]);
  });

  it("counts unplaced records in every placed partition's batch", () => {
    expect(sizes([record(undefined), record(0), record(1), record(0)])).toEqual([3, 1]);
  });

  it('keeps topics apart', () => {
    expect(sizes([record(0, 600_000, 'a'), record(0, 600_000, 'b')])).toEqual([2]);
  });
});
