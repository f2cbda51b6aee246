/**
 * A transaction whose EndTxn request (commit or abort) meets a dropped connection: the sink
 * must still end it exactly once and stay usable. The connection is cut deterministically by
 * a kafkajs socketFactory that recognises the EndTxn request on the wire (API key 26), either
 * before the request reaches the broker or after the broker has acted on it (the response is
 * lost: the ambiguous case, where redoing the work would duplicate every record).
 */
import net from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import type { ISocketFactory } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaConnectionConfig } from '../../infra/kafka/client-config.js';
import { kafkajsAdmin } from '../../infra/kafka/kafkajs-admin.js';
import { connectKafkajsAdmin } from '../../infra/kafka/kafkajs-client.js';
import { waitForLeaders } from '../../infra/kafka/topics.js';
import { kafkajsTransport } from '../../streams/kafka/kafkajs-adapter.js';
import { createKafkajsSink } from '../../streams/kafka/kafkajs-sink.js';
import type { KafkaTransport, OutgoingRecord } from '../../streams/kafka/transport.js';
import { startTestBroker, stopTestBroker, testConnection } from './harness.js';
import { readCommitted } from './read-records.js';

const ports = { port: 19510, controllerPort: 19511 };
const END_TXN_API_KEY = 26;
let config: KafkaConnectionConfig;
let transport: KafkaTransport;

type Cut = 'request' | 'response';

/**
 * Plain TCP sockets, except that the next `times` EndTxn requests written after `arm(times)` cut
 * their connection: `request` resets the socket instead of sending it; `response` sends it and
 * resets the socket when the broker's answer arrives, before kafkajs reads it.
 */
function cuttingSockets(cut: Cut): {
  socketFactory: ISocketFactory;
  arm: (times?: number) => void;
  cuts: () => number;
} {
  let armed = 0;
  let cuts = 0;
  const socketFactory: ISocketFactory = ({ host, port, onConnect }) => {
    const socket = net.connect({ host, port }, onConnect);
    // kafkajs notices a dead connection by 'error' or 'end', as a reset from the peer gives.
    const reset = () =>
      socket.destroy(Object.assign(new Error('connection cut by the test'), { code: 'ECONNRESET' }));
    let awaitingResponse = false;
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
          reset();
          return true;
        }
        awaitingResponse = true;
      }
      return write(chunk, ...rest);
    }) as typeof socket.write;
    const emit = socket.emit.bind(socket) as (event: string | symbol, ...args: unknown[]) => boolean;
    socket.emit = ((event: string | symbol, ...args: unknown[]) => {
      if (awaitingResponse && event === 'data') {
        awaitingResponse = false;
        reset();
        return true;
      }
      return emit(event, ...args);
    }) as typeof socket.emit;
    return socket;
  };
  return { socketFactory, arm: (times = 1) => void (armed = times), cuts: () => cuts };
}

/** A transactional sink whose connections cut EndTxn on demand; kafkajs retries `retries` times. */
function cuttingSink(cut: Cut, transactionalId: string, retries = config.retry.retries) {
  const sockets = cuttingSockets(cut);
  const kafka = new Kafka({
    clientId: 'spa-test-endtxn',
    brokers: [...config.brokers],
    retry: { retries, initialRetryTime: 100, maxRetryTime: 1000 },
    logLevel: logLevel.NOTHING,
    socketFactory: sockets.socketFactory,
  });
  return { sockets, sink: createKafkajsSink(kafka, config, { transactionalId }) };
}

const record = (topic: string, id: string): OutgoingRecord => ({
  topic,
  key: Buffer.from(id),
  value: Buffer.from(id),
});

/** Every value on `topic` (read_committed, up to its end), once `count` have arrived. */
function committedValues(topic: string, count: number): Promise<string[]> {
  return readCommitted({ transport, config }, topic, (r) => r.value?.toString() ?? '', count);
}

beforeAll(async () => {
  const broker = await startTestBroker('endtxn', ports);
  config = testConnection(broker.brokers);
  transport = kafkajsTransport(config);
  const admin = await connectKafkajsAdmin(config);
  const topics = [
    'endtxn-commit-request',
    'endtxn-commit-response',
    'endtxn-abort',
    'endtxn-stuck-abort',
    'endtxn-unknown-commit',
  ];
  await admin.createTopics({
    waitForLeaders: false,
    topics: topics.map((topic) => ({ topic, numPartitions: 2, replicationFactor: 1 })),
  });
  await waitForLeaders(kafkajsAdmin(admin), topics);
  await admin.disconnect();
});

afterAll(async () => {
  await transport?.close();
  await stopTestBroker('endtxn', ports);
});

describe('a transaction whose EndTxn meets a dropped connection', () => {
  for (const cut of ['request', 'response'] as const) {
    it(`commits exactly once when the commit's ${cut} is lost, and the sink goes on`, async () => {
      const topic = `endtxn-commit-${cut}`;
      const { sockets, sink: opening } = cuttingSink(cut, `spa-test-endtxn-${cut}`);
      const sink = await opening;
      const first = ['a1', 'a2', 'a3', 'a4'];
      await sink.transaction(async (tx) => {
        await tx.send(first.map((id) => record(topic, id)));
        sockets.arm(); // the next EndTxn is this transaction's commit
      });
      expect(sockets.cuts()).toBe(1);
      await sink.transaction((tx) => tx.send([record(topic, 'b1')]));
      await sink.close();
      expect((await committedValues(topic, 5)).sort()).toEqual([...first, 'b1']);
    });
  }

  it('aborts when the abort request is lost, reports the work error, and the sink goes on', async () => {
    const topic = 'endtxn-abort';
    const { sockets, sink: opening } = cuttingSink('request', 'spa-test-endtxn-abort');
    const sink = await opening;
    await expect(
      sink.transaction(async (tx) => {
        await tx.send([record(topic, 'aborted')]);
        sockets.arm(); // the next EndTxn is this transaction's abort
        throw new Error('annotation failed');
      }),
    ).rejects.toThrow('annotation failed');
    expect(sockets.cuts()).toBe(1);
    await sink.transaction((tx) => tx.send([record(topic, 'kept')]));
    await sink.close();
    expect(await committedValues(topic, 1)).toEqual(['kept']);
  });
  it('replaces a producer whose abort failed past every retry; the dangling transaction is aborted', async () => {
    const topic = 'endtxn-stuck-abort';
    const { sockets, sink: opening } = cuttingSink('request', 'spa-test-endtxn-stuck', 2);
    const sink = await opening;
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
    await sink.close();
    expect(await committedValues(topic, 1)).toEqual(['kept']);
  });

  it('reports a commit that failed past every retry and never redoes it; the sink goes on', async () => {
    const topic = 'endtxn-unknown-commit';
    const { sockets, sink: opening } = cuttingSink('request', 'spa-test-endtxn-unknown', 2);
    const sink = await opening;
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
    await sink.close();
    // The cut requests never reached the broker, so fencing the old producer aborted it.
    expect(await committedValues(topic, 1)).toEqual(['next']);
  });
});
