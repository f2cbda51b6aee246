/**
 * A transaction whose EndTxn request (commit or abort) meets a dropped connection: the sink
 * must still end it exactly once and stay usable. The connection is cut deterministically when
 * the EndTxn request (API key 26) is written, either before the request reaches the broker or
 * after the broker has acted on it (the response is lost: the ambiguous case, where redoing the
 * work would duplicate every record), by a socketFactory that recognises the request on the wire.
 *
 * Needs the EndTxn fix of patches/kafkajs+2.2.4.patch (producer/eosManager/index.js,
 * `endTransaction`): kafkajs 2.2.4 sent EndTxn once, so one lost EndTxn left its transaction
 * state machine in COMMITTING or ABORTING for good and the producer unusable (tulios/kafkajs#1275,
 * #1282, open upstream). Patched, EndTxn is retried with the same producer id and epoch, looking
 * the coordinator up again each time, as the Java client does; the coordinator answers a repeated
 * EndTxn for a transaction it already ended with success.
 */
import net from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import type { ISocketFactory } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaConnectionConfig } from '../../infra/kafka/client/config.js';
import { waitForLeaders } from '../../infra/kafka/topics.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import { createKafkajsSink } from '../../infra/kafka/client/kafkajs-sink.js';
import type { KafkaTransport, OutgoingRecord, RecordSink } from '../../infra/kafka/client/transport.js';
import { startTestBroker, stopTestBroker, testConnection } from './harness.js';
import { readCommitted } from './read-records.js';

const ports = { port: 19510, controllerPort: 19511 };
const END_TXN_API_KEY = 26;
let config: KafkaConnectionConfig;

type Cut = 'request' | 'response';

/** What a cutting sink's test arms and counts. */
interface Cutter {
  /** Cuts the next `times` EndTxn requests (default 1; 0 disarms). */
  arm: (times?: number) => void;
  /** EndTxn requests cut so far. */
  cuts: () => number;
}

/** A socket whose next 'data' event resets it instead of reaching the client. */
function cutOnNextData(socket: net.Socket): void {
  const emit = socket.emit.bind(socket) as (event: string | symbol, ...args: unknown[]) => boolean;
  socket.emit = ((event: string | symbol, ...args: unknown[]) => {
    if (event !== 'data') return emit(event, ...args);
    socket.emit = emit as typeof socket.emit;
    reset(socket);
    return true;
  }) as typeof socket.emit;
}

/** Destroys `socket` as a reset from the peer would: the client notices it by 'error' and 'close'. */
function reset(socket: net.Socket): void {
  socket.destroy(Object.assign(new Error('connection cut by the test'), { code: 'ECONNRESET' }));
}

/**
 * Plain TCP sockets for kafkajs, except that the next `times` EndTxn requests written after
 * `arm(times)` cut their connection: `request` resets the socket instead of sending it;
 * `response` sends it and resets the socket when the broker's answer arrives, before kafkajs
 * reads it.
 */
function cuttingSockets(cut: Cut): Cutter & { socketFactory: ISocketFactory } {
  let armed = 0;
  let cuts = 0;
  const socketFactory: ISocketFactory = ({ host, port, onConnect }) => {
    const socket = net.connect({ host, port }, onConnect);
    const write = socket.write.bind(socket) as (chunk: unknown, ...rest: unknown[]) => boolean;
    socket.write = ((chunk: unknown, ...rest: unknown[]) => {
      // A kafkajs request is one buffer: int32 size, then int16 API key.
      if (
        armed > 0 &&
        Buffer.isBuffer(chunk) &&
        chunk.length >= 6 &&
        chunk.readInt16BE(4) === END_TXN_API_KEY
      ) {
        armed -= 1;
        cuts += 1;
        if (cut === 'request') {
          reset(socket);
          return true;
        }
        cutOnNextData(socket);
      }
      return write(chunk, ...rest);
    }) as typeof socket.write;
    return socket;
  };
  return { socketFactory, arm: (times = 1) => void (armed = times), cuts: () => cuts };
}

/** `close` run once, however often it is called (a test closes early and again in `finally`). */
function once(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= close());
}

/**
 * A transactional sink whose connections cut EndTxn on demand; kafkajs retries `retries` times.
 * `close` closes the sink (once).
 */
async function cuttingSink(
  cut: Cut,
  transactionalId: string,
  retries = config.retry.retries,
): Promise<{ sockets: Cutter; sink: RecordSink; close: () => Promise<void> }> {
  const sockets = cuttingSockets(cut);
  const kafka = new Kafka({
    clientId: 'spa-test-endtxn',
    brokers: [...config.brokers],
    retry: { retries, initialRetryTime: 100, maxRetryTime: 1000 },
    logLevel: logLevel.NOTHING,
    socketFactory: sockets.socketFactory,
  });
  const sink = await createKafkajsSink(kafka, config, { transactionalId });
  return { sockets, sink, close: once(() => sink.close()) };
}

const record = (topic: string, id: string): OutgoingRecord => ({
  topic,
  key: Buffer.from(id),
  value: Buffer.from(id),
});

const topicNames = [
  'endtxn-commit-request',
  'endtxn-commit-response',
  'endtxn-abort',
  'endtxn-stuck-abort',
  'endtxn-unknown-commit',
];

beforeAll(async () => {
  const broker = await startTestBroker('endtxn', ports);
  config = testConnection(broker.brokers);
});

afterAll(async () => {
  await stopTestBroker('endtxn', ports);
});

describe('a transaction whose EndTxn meets a dropped connection', () => {
  let transport: KafkaTransport;
  const txnId = (name: string): string => `spa-test-endtxn-${name}`;

  /** Every value on `topic` (read_committed, up to its end), once `count` have arrived. */
  const committedValues = (topic: string, count: number): Promise<string[]> =>
    readCommitted({ transport, config }, topic, (r) => r.value?.toString() ?? '', count);

  beforeAll(async () => {
    transport = kafkaTransport(config);
    const admin = await transport.admin();
    await admin.createTopics(
      topicNames.map((name) => ({ name, partitions: 2, replicationFactor: 1, configs: {} })),
    );
    await waitForLeaders(admin, topicNames);
    await admin.close();
  });

  afterAll(async () => {
    await transport?.close();
  });

  for (const cut of ['request', 'response'] as const) {
    it(`commits exactly once when the commit's ${cut} is lost, and the sink goes on`, async () => {
      const topic = `endtxn-commit-${cut}`;
      const { sockets, sink, close } = await cuttingSink(cut, txnId(cut));
      try {
        const first = ['a1', 'a2', 'a3', 'a4'];
        await sink.transaction(async (tx) => {
          await tx.send(first.map((id) => record(topic, id)));
          sockets.arm(); // the next EndTxn is this transaction's commit
        });
        expect(sockets.cuts()).toBe(1);
        await sink.transaction((tx) => tx.send([record(topic, 'b1')]));
        await close();
        expect((await committedValues(topic, 5)).sort()).toEqual([...first, 'b1']);
      } finally {
        await close();
      }
    });
  }

  it('aborts when the abort request is lost, reports the work error, and the sink goes on', async () => {
    const topic = 'endtxn-abort';
    const { sockets, sink, close } = await cuttingSink('request', txnId('abort'));
    try {
      await expect(
        sink.transaction(async (tx) => {
          await tx.send([record(topic, 'aborted')]);
          sockets.arm(); // the next EndTxn is this transaction's abort
          throw new Error('annotation failed');
        }),
      ).rejects.toThrow('annotation failed');
      expect(sockets.cuts()).toBe(1);
      await sink.transaction((tx) => tx.send([record(topic, 'kept')]));
      await close();
      expect(await committedValues(topic, 1)).toEqual(['kept']);
    } finally {
      await close();
    }
  });

  it('replaces a producer whose abort failed past every retry; the dangling transaction is aborted', async () => {
    const topic = 'endtxn-stuck-abort';
    const { sockets, sink, close } = await cuttingSink('request', txnId('stuck'), 2);
    try {
      await expect(
        sink.transaction(async (tx) => {
          await tx.send([record(topic, 'aborted')]);
          sockets.arm(1_000); // every EndTxn of this abort
          throw new Error('annotation failed');
        }),
      ).rejects.toThrow('annotation failed');
      expect(sockets.cuts()).toBeGreaterThanOrEqual(3); // at least the first try and both retries
      sockets.arm(0);
      await sink.transaction((tx) => tx.send([record(topic, 'kept')]));
      await close();
      expect(await committedValues(topic, 1)).toEqual(['kept']);
    } finally {
      await close();
    }
  });

  it('reports a commit that failed past every retry and never redoes it; the sink goes on', async () => {
    const topic = 'endtxn-unknown-commit';
    const { sockets, sink, close } = await cuttingSink('request', txnId('unknown'), 2);
    try {
      let runs = 0;
      await expect(
        sink.transaction(async (tx) => {
          runs += 1;
          await tx.send([record(topic, 'unknown')]);
          sockets.arm(1_000); // every EndTxn of this commit
        }),
      ).rejects.toThrow(/committing a transaction/);
      expect(runs).toBe(1);
      sockets.arm(0);
      await sink.transaction((tx) => tx.send([record(topic, 'next')]));
      await close();
      // The cut requests never reached the broker, so fencing the old producer aborted it.
      expect(await committedValues(topic, 1)).toEqual(['next']);
    } finally {
      await close();
    }
  });
});
