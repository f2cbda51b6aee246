/**
 * Issue 33 item 3, without a broker: the position a tap keeps for itself (read-positions.ts)
 * seeks every assignment to the offset after the last record shown, drops what a client delivers
 * again before such a seek holds, and logs a rejoin. The broker restart itself is
 * tap-restart.slow.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { ReadPositions } from '../../streams/kafka/read-positions.js';
import type { ConsumedRecord, TopicPartitionOffset } from '../../infra/kafka/client/transport.js';

const record = (partition: number, offset: bigint): ConsumedRecord => ({
  topic: 't',
  partition,
  offset,
  key: null,
  value: null,
  headers: {},
  timestamp: 0,
});

describe('ReadPositions', () => {
  const setup = () => {
    const logged: string[] = [];
    const seeks: TopicPartitionOffset[] = [];
    const positions = new ReadPositions(
      't',
      [
        { partition: 0, start: 5n },
        { partition: 1, start: 0n },
      ],
      (line) => logged.push(line),
    );
    const seek = (position: TopicPartitionOffset) => void seeks.push(position);
    return { positions, logged, seeks, seek };
  };

  it('starts each partition at the read start, silently', () => {
    const { positions, logged, seeks, seek } = setup();
    positions.assigned(
      [
        { topic: 't', partition: 0 },
        { topic: 't', partition: 1 },
      ],
      seek,
    );
    expect(seeks).toEqual([
      { topic: 't', partition: 0, offset: 5n },
      { topic: 't', partition: 1, offset: 0n },
    ]);
    expect(logged).toEqual([]);
  });

  it('resumes after the last record shown when the consumer rejoins, and says so', () => {
    const { positions, logged, seeks, seek } = setup();
    positions.assigned([{ topic: 't', partition: 0 }], seek);
    expect([5n, 6n, 9n].map((offset) => positions.take(record(0, offset)))).toEqual([true, true, true]);
    positions.assigned(
      [
        { topic: 't', partition: 0 },
        { topic: 't', partition: 1 },
      ],
      seek,
    );
    expect(seeks.slice(1)).toEqual([
      { topic: 't', partition: 0, offset: 10n },
      { topic: 't', partition: 1, offset: 0n },
    ]);
    expect(logged).toEqual([
      't: the consumer rejoined its group, resuming at partition 0 offset 10, partition 1 offset 0',
    ]);
  });

  it('says when the connection is lost and, once it is back, where the read resumes', () => {
    const { positions, logged, seek } = setup();
    positions.assigned([{ topic: 't', partition: 0 }], seek);
    positions.take(record(0, 5n));
    positions.connection('lost');
    positions.connection('lost'); // each failed retry: said once
    positions.assigned([{ topic: 't', partition: 0 }], seek); // the rejoin the return reports
    positions.connection('regained');
    positions.connection('regained');
    expect(logged).toEqual([
      't: broker connection lost; reconnecting (the read keeps its place)',
      't: broker connection lost/regained, resuming at partition 0 offset 6, partition 1 offset 0',
    ]);
  });

  it('drops records below the position (delivered again before a seek held), never ones above', () => {
    const { positions } = setup();
    expect(positions.take(record(0, 4n))).toBe(false); // below the read's start
    expect(positions.take(record(0, 5n))).toBe(true);
    expect(positions.take(record(0, 5n))).toBe(false);
    expect(positions.take(record(0, 8n))).toBe(true); // a gap (transaction markers) is fine
    expect(positions.take(record(0, 7n))).toBe(false);
    expect(positions.take(record(1, 0n))).toBe(true);
  });

  it('leaves a partition the read did not know at its group start (the topic grew)', () => {
    const { positions, seeks, seek } = setup();
    positions.assigned([{ topic: 't', partition: 2 }], seek);
    expect(seeks).toEqual([]);
    expect(positions.take(record(2, 0n))).toBe(true);
  });
});
