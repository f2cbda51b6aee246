/**
 * The pure parts of the @platformatic/kafka adapter: partitioning as kafkajs does, records in and
 * out, the read_committed filter, the connection options and error handling, and the client
 * choice. The adapter against a broker: transport.slow.test.ts (both clients).
 */
import {
  AuthenticationError,
  IS_CONTROL,
  IS_TRANSACTIONAL,
  kOptions,
  kPerformWithRetry,
  NetworkError,
  ProtocolError,
  UserError,
} from '@platformatic/kafka';
import type { RecordsBatch } from '@platformatic/kafka';
import { kafkajsPartition } from './kafkajs-partition.js';
import { describe, expect, it } from 'vitest';
import { kafkaConnectionConfig } from '../../infra/kafka/client-config.js';
import {
  describePlatformaticError,
  flagRetriable,
  isPlatformaticRetriable,
  platformaticBaseOptions,
  platformaticErrorHas,
  retryDelayMs,
} from '../../infra/kafka/platformatic-client.js';
import { kafkaClientFromEnv } from '../../streams/kafka/kafka-client.js';
import { COORDINATOR_UNREACHABLE, producerWithRetries } from '../../streams/kafka/platformatic-sink.js';
import {
  committedRecords,
  kafkajsCompatiblePartitioner,
  toPlatformaticMessages,
} from '../../streams/kafka/platformatic-records.js';

describe('kafkajsCompatiblePartitioner', () => {
  it('puts a key on the partition kafkajs (and the Java client) puts it on', () => {
    const partitioner = kafkajsCompatiblePartitioner();
    const keys = [
      '',
      'a',
      'key-0',
      'key-6',
      'sokoban-123-7',
      'traj-00000000-0000-4000-8000-000000000000',
      'é🎲',
    ];
    for (const text of keys)
      for (const partitions of [1, 2, 3, 6, 7, 12, 100]) {
        const key = Buffer.from(text);
        // The library takes the partitioner's number modulo the topic's partition count.
        const ours =
          partitioner({ topic: 't', key, value: Buffer.alloc(0) }, key, { metadata: undefined }) % partitions;
        expect({ text, partitions, partition: ours }).toEqual({
          text,
          partitions,
          partition: kafkajsPartition(key, partitions),
        });
      }
  });

  it('matches known Java partitions (Utils.toPositive(Utils.murmur2(key)) % n)', () => {
    const partitioner = kafkajsCompatiblePartitioner();
    const partition = (text: string, n: number): number =>
      partitioner({ topic: 't', value: Buffer.alloc(0) }, Buffer.from(text), { metadata: undefined }) % n;
    // murmur2("21") = -973932308 in Kafka's own test (UtilsTest.testMurmur2): toPositive → 1173551340.
    expect(
      partitioner({ topic: 't', value: Buffer.alloc(0) }, Buffer.from('21'), { metadata: undefined }),
    ).toBe(-973932308 & 0x7fffffff);
    expect(partition('21', 3)).toBe((-973932308 & 0x7fffffff) % 3);
  });

  it('spreads records without a key round-robin, one counter per topic', () => {
    const partitioner = kafkajsCompatiblePartitioner();
    const next = (topic: string): number =>
      partitioner({ topic, value: Buffer.alloc(0) }, undefined, { metadata: undefined }) % 3;
    expect([next('a'), next('a'), next('b'), next('a'), next('a')]).toEqual([0, 1, 0, 2, 0]);
  });
});

describe('toPlatformaticMessages', () => {
  it('keeps key, value, partition and timestamp; header names become Buffers; a null key is left out', () => {
    const [keyed, bare] = toPlatformaticMessages([
      {
        topic: 't',
        key: Buffer.from('k'),
        value: Buffer.from('v'),
        headers: { traceparent: Buffer.from('00-ab') },
        timestamp: 1_700_000_000_123,
        partition: 2,
      },
      { topic: 't', key: null, value: null },
    ]);
    expect(keyed).toEqual({
      topic: 't',
      key: Buffer.from('k'),
      value: Buffer.from('v'),
      headers: new Map([[Buffer.from('traceparent'), Buffer.from('00-ab')]]),
      timestamp: 1_700_000_000_123n,
      partition: 2,
    });
    expect(bare).toEqual({ topic: 't', value: null });
    expect('key' in bare!).toBe(false);
  });
});

describe('committedRecords', () => {
  /** A data batch of `count` records from `producerId`, starting at `firstOffset`. */
  const data = (
    firstOffset: bigint,
    count: number,
    producerId = -1n,
    transactional = producerId >= 0n,
  ): RecordsBatch => ({
    firstOffset,
    length: 0,
    partitionLeaderEpoch: 0,
    magic: 2,
    crc: 0,
    attributes: transactional ? IS_TRANSACTIONAL : 0,
    lastOffsetDelta: count - 1,
    firstTimestamp: 1000n,
    maxTimestamp: 1000n,
    producerId,
    producerEpoch: 0,
    firstSequence: 0,
    records: Array.from({ length: count }, (_, i) => ({
      length: 0,
      attributes: 0,
      timestampDelta: BigInt(i),
      offsetDelta: i,
      key: Buffer.from(`k${Number(firstOffset) + i}`),
      value: Buffer.from(`v${Number(firstOffset) + i}`),
      headers: [
        [Buffer.from('h'), Buffer.from('first')],
        [Buffer.from('h'), Buffer.from('last')],
      ],
    })),
  });
  /** A transaction marker of `producerId` at `offset`: control type 0 aborts, 1 commits. */
  const marker = (offset: bigint, producerId: bigint, type: 0 | 1): RecordsBatch => {
    const key = Buffer.alloc(4);
    key.writeInt16BE(0, 0);
    key.writeInt16BE(type, 2);
    return {
      ...data(offset, 1, producerId),
      attributes: IS_TRANSACTIONAL | IS_CONTROL,
      records: [
        {
          length: 0,
          attributes: 0,
          timestampDelta: 0n,
          offsetDelta: 0,
          key,
          value: Buffer.alloc(6),
          headers: [],
        },
      ],
    };
  };
  const offsets = (
    batches: RecordsBatch[],
    aborted: { producerId: bigint; firstOffset: bigint }[],
    from = 0n,
  ) => committedRecords(batches, aborted, from).records.map((r) => Number(r.offset));

  it('hands over records with offsets, timestamps and headers (a repeated name keeps its last value)', () => {
    const { records, nextOffset } = committedRecords([data(5n, 2)], [], 5n);
    expect(records).toEqual([
      {
        offset: 5n,
        key: Buffer.from('k5'),
        value: Buffer.from('v5'),
        headers: { h: Buffer.from('last') },
        timestamp: 1000,
      },
      {
        offset: 6n,
        key: Buffer.from('k6'),
        value: Buffer.from('v6'),
        headers: { h: Buffer.from('last') },
        timestamp: 1001,
      },
    ]);
    expect(nextOffset).toBe(7n);
  });

  it('skips records before the fetch offset (a batch may begin earlier) and nothing else', () => {
    expect(offsets([data(0n, 4), data(4n, 2)], [], 2n)).toEqual([2, 3, 4, 5]);
  });

  it('drops an aborted transaction and its marker, keeps a committed one and plain records', () => {
    const batches = [data(0n, 2, 7n), marker(2n, 7n, 1), data(3n, 1, 7n), marker(4n, 7n, 0), data(5n, 2)];
    const { records, nextOffset } = committedRecords(batches, [{ producerId: 7n, firstOffset: 3n }], 0n);
    expect(records.map((r) => Number(r.offset))).toEqual([0, 1, 5, 6]);
    expect(nextOffset).toBe(7n);
  });

  it('drops two aborted transactions of one producer in one fetch (the library keeps one range per producer)', () => {
    const batches = [
      data(0n, 2, 7n),
      marker(2n, 7n, 0),
      data(3n, 2, 7n),
      marker(5n, 7n, 1),
      data(6n, 1, 7n),
      marker(7n, 7n, 0),
    ];
    const aborted = [
      { producerId: 7n, firstOffset: 6n },
      { producerId: 7n, firstOffset: 0n },
    ];
    expect(offsets(batches, aborted)).toEqual([3, 4]);
  });

  it("drops an aborted transaction whose marker is past the fetch, and keeps another producer's records", () => {
    const batches = [data(0n, 2, 7n), data(2n, 2, 8n), data(4n, 1, 7n)];
    expect(offsets(batches, [{ producerId: 7n, firstOffset: 0n }])).toEqual([2, 3]);
  });

  it('moves past a fetch of markers alone, with no records to hand over', () => {
    expect(committedRecords([marker(9n, 7n, 1)], [], 9n)).toEqual({ records: [], nextOffset: 10n });
    expect(committedRecords([], [], 9n)).toEqual({ records: [], nextOffset: undefined });
  });
});

describe('platformatic connection options', () => {
  const config = kafkaConnectionConfig({
    clientId: 'spa-x',
    brokers: ['b1:9092', 'b2:9093'],
    connectionTimeoutMs: 1234,
    requestTimeoutMs: 5678,
    retry: { retries: 5, initialRetryTimeMs: 100, maxRetryTimeMs: 700 },
  });

  it('maps brokers, client id, timeouts and retries; no SASL or TLS unless asked', () => {
    const options = platformaticBaseOptions(config);
    expect(options).toMatchObject({
      clientId: 'spa-x',
      bootstrapBrokers: ['b1:9092', 'b2:9093'],
      connectTimeout: 1234,
      requestTimeout: 5678,
      timeout: 5678,
      retries: 5,
      autocreateTopics: false,
    });
    expect(options.sasl).toBeUndefined();
    expect(options.tls).toBeUndefined();
  });

  it('backs off exponentially up to the cap, optionally with a short first retry', () => {
    expect([1, 2, 3, 4, 5].map((attempt) => retryDelayMs(config, attempt))).toEqual([
      100, 200, 400, 700, 700,
    ]);
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs(config, attempt, 20))).toEqual([20, 100, 200, 400]);
    const delay = platformaticBaseOptions(config, 20).retryDelay as (...args: unknown[]) => number;
    expect(delay({}, 'produce', 1, 5, new Error('x'))).toBe(20);
  });

  it.each([
    ['plain', 'PLAIN'],
    ['scram-sha-256', 'SCRAM-SHA-256'],
    ['scram-sha-512', 'SCRAM-SHA-512'],
  ] as const)('maps SASL %s to %s, and TLS to a TLS connection', (mechanism, expected) => {
    const options = platformaticBaseOptions(
      kafkaConnectionConfig({ ssl: true, sasl: { mechanism, username: 'u', password: 'p' } }),
    );
    expect(options.sasl).toEqual({ mechanism: expected, username: 'u', password: 'p' });
    expect(options.tls).toEqual({});
  });
});

describe('producerWithRetries', () => {
  const options = (retries: number) => ({
    ...platformaticBaseOptions(
      kafkaConnectionConfig({ retry: { retries, initialRetryTimeMs: 1, maxRetryTimeMs: 1 } }),
    ),
    idempotent: true,
  });

  it.each([1, 2, 8])(
    'keeps an idempotent producer at %i retries (the library makes 1 or fewer endless)',
    async (retries) => {
      const producer = producerWithRetries(options(retries), retries);
      try {
        expect(producer[kOptions].retries).toBe(retries);
      } finally {
        await producer.close();
      }
    },
  );

  it('tries the connection to the transaction coordinator once inside a request, marks its error, and retries the request', async () => {
    const producer = producerWithRetries(options(2), 2);
    /** Runs `operationId` through the producer's retry loop with a step that always fails: the tries and the error. */
    const run = (operationId: string): Promise<{ tries: number; error: unknown }> =>
      new Promise((resolve) => {
        let tries = 0;
        void producer[kPerformWithRetry](
          operationId,
          (callback) => {
            tries += 1;
            callback(new NetworkError('connect ECONNREFUSED'), undefined as never);
          },
          (error) => resolve({ tries, error }),
        );
      });
    try {
      const connection = await run('getCoordinatorConnection');
      expect(connection.tries).toBe(1);
      expect(platformaticErrorHas(connection.error, COORDINATOR_UNREACHABLE, true)).toBe(true);
      for (const request of ['addPartitionsToTransaction', 'endTransaction']) {
        const outcome = await run(request);
        expect(outcome.tries).toBe(3);
        expect(platformaticErrorHas(outcome.error, COORDINATOR_UNREACHABLE, true)).toBe(false);
      }
    } finally {
      await producer.close();
    }
  });
});

describe('platformatic errors', () => {
  const config = kafkaConnectionConfig({
    brokers: ['b1:9092'],
    sasl: { mechanism: 'scram-sha-256', username: 'spa', password: 'x' },
  });

  it('tells retriable errors apart the way the transaction retry needs', () => {
    expect(isPlatformaticRetriable(new ProtocolError('NOT_LEADER_OR_FOLLOWER'))).toBe(true);
    expect(isPlatformaticRetriable(new ProtocolError('CONCURRENT_TRANSACTIONS'))).toBe(true);
    expect(isPlatformaticRetriable(new NetworkError('Connection closed'))).toBe(true);
    expect(isPlatformaticRetriable(new ProtocolError('INVALID_PRODUCER_EPOCH'))).toBe(false);
    expect(isPlatformaticRetriable(new AuthenticationError('refused'))).toBe(false);
    expect(isPlatformaticRetriable(new UserError('bad option'))).toBe(false);
    expect(isPlatformaticRetriable(new Error('annotation failed'))).toBe(false);
  });

  it('flags a retriable error `retriable: true` as kafkajs does, and leaves others alone', () => {
    expect(
      (flagRetriable(new ProtocolError('NOT_LEADER_OR_FOLLOWER')) as { retriable?: boolean }).retriable,
    ).toBe(true);
    expect((flagRetriable(new UserError('bad')) as { retriable?: boolean }).retriable).toBeUndefined();
  });

  it('names the SASL user, mechanism and brokers when the login is refused', () => {
    const error = describePlatformaticError(
      new AuthenticationError('SASL authentication failed.'),
      'connecting a producer',
      config,
    );
    expect(error.message).toBe(
      'Kafka refused the credentials of SASL user "spa" (SCRAM-SHA-256) on b1:9092 while connecting a producer: wrong username or password',
    );
  });

  it('names the brokers when they cannot be reached, and the protocol error otherwise', () => {
    expect(describePlatformaticError(new NetworkError('ECONNREFUSED'), 'consuming', config).message).toBe(
      'cannot reach Kafka at b1:9092 while consuming: ECONNREFUSED',
    );
    expect(
      describePlatformaticError(
        new ProtocolError('TRANSACTIONAL_ID_AUTHORIZATION_FAILED'),
        'running a transaction',
        config,
      ).message,
    ).toMatch(/^Kafka error while running a transaction: .*\(TRANSACTIONAL_ID_AUTHORIZATION_FAILED: /);
  });
});

describe('SPA_KAFKA_CLIENT', () => {
  it('defaults to kafkajs and accepts platformatic', () => {
    expect(kafkaClientFromEnv({})).toBe('kafkajs');
    expect(kafkaClientFromEnv({ SPA_KAFKA_CLIENT: '' })).toBe('kafkajs');
    expect(kafkaClientFromEnv({ SPA_KAFKA_CLIENT: 'kafkajs' })).toBe('kafkajs');
    expect(kafkaClientFromEnv({ SPA_KAFKA_CLIENT: ' Platformatic ' })).toBe('platformatic');
  });

  it('refuses anything else, naming the variable and the allowed values', () => {
    expect(() => kafkaClientFromEnv({ SPA_KAFKA_CLIENT: 'librdkafka' })).toThrow(
      'SPA_KAFKA_CLIENT="librdkafka" is not a Kafka client; expected one of: kafkajs, platformatic',
    );
    expect(() => kafkaClientFromEnv({ SPA_KAFKA_CLIENT: 'toString' })).toThrow('SPA_KAFKA_CLIENT="toString"');
  });
});
