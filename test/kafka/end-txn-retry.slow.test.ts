/**
 * A transaction whose EndTxn request (commit or abort) meets a dropped connection: the sink
 * must still end it exactly once and stay usable, on each client. The connection is cut
 * deterministically when the EndTxn request (API key 26) is written, either before the request
 * reaches the broker or after the broker has acted on it (the response is lost: the ambiguous
 * case, where redoing the work would duplicate every record). kafkajs' connections are cut by a
 * socketFactory that recognises the request on the wire; @platformatic/kafka's by a subscriber
 * to its `plt:kafka:connections:api` diagnostics channel, published just before a request is
 * written to its connection's socket.
 */
import { channel } from 'node:diagnostics_channel';
import net from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import type { ISocketFactory } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaConnectionConfig } from '../../infra/kafka/client-config.js';
import { waitForLeaders } from '../../infra/kafka/topics.js';
import { kafkaTransport, type KafkaClientName } from '../../streams/kafka/kafka-client.js';
import { createKafkajsSink } from '../../streams/kafka/kafkajs-sink.js';
import type { KafkaTransport, OutgoingRecord, RecordSink } from '../../streams/kafka/transport.js';
import { kafkaClients, startTestBroker, stopTestBroker, testConnection } from './harness.js';
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

/** What @platformatic/kafka publishes on `plt:kafka:connections:api` as a request is sent. */
interface PlatformaticRequestEvent {
  readonly apiKey: number;
  readonly connection: { readonly socket: net.Socket };
}

/**
 * The same cuts for every @platformatic/kafka connection of this process while armed: the
 * library publishes each request on its diagnostics channel (the start event) just before writing it to the
 * connection's socket; `request` resets the socket there (the write then goes nowhere and the
 * request fails as the connection closes), `response` lets it through and resets the socket on
 * the broker's answer. `dispose` unsubscribes.
 */
function cuttingPlatformaticConnections(cut: Cut): Cutter & { dispose: () => void } {
  let armed = 0;
  let cuts = 0;
  // The start event of the library's `plt:kafka:connections:api` tracing channel.
  const requests = channel('tracing:plt:kafka:connections:api:start');
  const onRequest = (message: unknown): void => {
    const { apiKey, connection } = message as PlatformaticRequestEvent;
    if (armed === 0 || apiKey !== END_TXN_API_KEY) return;
    armed -= 1;
    cuts += 1;
    if (cut === 'request') reset(connection.socket);
    else cutOnNextData(connection.socket);
  };
  requests.subscribe(onRequest);
  return {
    arm: (times = 1) => void (armed = times),
    cuts: () => cuts,
    dispose: () => void requests.unsubscribe(onRequest),
  };
}

/** `close` run once, however often it is called (a test closes early and again in `finally`). */
function once(close: () => Promise<void>): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => (closing ??= close());
}

/**
 * A transactional sink on `client` whose connections cut EndTxn on demand; the client retries
 * `retries` times. `close` closes the sink and whatever the cutting needed.
 */
async function cuttingSink(
  client: KafkaClientName,
  cut: Cut,
  transactionalId: string,
  retries = config.retry.retries,
): Promise<{ sockets: Cutter; sink: RecordSink; close: () => Promise<void> }> {
  const retry = { retries, initialRetryTimeMs: 100, maxRetryTimeMs: 1000 };
  if (client === 'kafkajs') {
    const sockets = cuttingSockets(cut);
    const kafka = new Kafka({
      clientId: 'spa-test-endtxn',
      brokers: [...config.brokers],
      retry: { retries, initialRetryTime: retry.initialRetryTimeMs, maxRetryTime: retry.maxRetryTimeMs },
      logLevel: logLevel.NOTHING,
      socketFactory: sockets.socketFactory,
    });
    const sink = await createKafkajsSink(kafka, config, { transactionalId });
    return { sockets, sink, close: once(() => sink.close()) };
  }
  const sockets = cuttingPlatformaticConnections(cut);
  const cutting = kafkaTransport(
    { ...config, clientId: 'spa-test-endtxn', retry: { ...config.retry, ...retry } },
    client,
  );
  try {
    const sink = await cutting.sink({ transactionalId });
    return {
      sockets,
      sink,
      close: once(async () => {
        sockets.dispose();
        await cutting.close();
      }),
    };
  } catch (error) {
    sockets.dispose();
    await cutting.close();
    throw error;
  }
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

describe.each(kafkaClients)('a transaction whose EndTxn meets a dropped connection (%s)', (client) => {
  let transport: KafkaTransport;
  /** This client's own copy of a topic and transactional id. */
  const topicOf = (name: string): string => `${name}-${client}`;
  const txnId = (name: string): string => `spa-test-endtxn-${name}-${client}`;

  /** Every value on `topic` (read_committed, up to its end), once `count` have arrived. */
  const committedValues = (topic: string, count: number): Promise<string[]> =>
    readCommitted({ transport, config }, topic, (r) => r.value?.toString() ?? '', count);

  beforeAll(async () => {
    transport = kafkaTransport(config, client);
    const admin = await transport.admin();
    const topics = topicNames.map(topicOf);
    await admin.createTopics(
      topics.map((name) => ({ name, partitions: 2, replicationFactor: 1, configs: {} })),
    );
    await waitForLeaders(admin, topics);
    await admin.close();
  });

  afterAll(async () => {
    await transport?.close();
  });

  for (const cut of ['request', 'response'] as const) {
    it(`commits exactly once when the commit's ${cut} is lost, and the sink goes on`, async () => {
      const topic = topicOf(`endtxn-commit-${cut}`);
      const { sockets, sink, close } = await cuttingSink(client, cut, txnId(cut));
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
    const topic = topicOf('endtxn-abort');
    const { sockets, sink, close } = await cuttingSink(client, 'request', txnId('abort'));
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
    const topic = topicOf('endtxn-stuck-abort');
    const { sockets, sink, close } = await cuttingSink(client, 'request', txnId('stuck'), 2);
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
    const topic = topicOf('endtxn-unknown-commit');
    const { sockets, sink, close } = await cuttingSink(client, 'request', txnId('unknown'), 2);
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
