/**
 * Issue 33 item 3: a tap following a topic (readTopic, as `spa tap --follow` and `spa tap --web`
 * read) keeps its place when the broker restarts — every record shown exactly once, from the
 * history (`earliest`) or from now on (`latest`, `--only-new`) — says so in its log, and stops
 * within 2 s while the broker is down, in-process and as the `spa tap` command.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBroker, stopBroker } from '../../infra/kafka/broker.js';
import { readTopic, type KafkaConnection, type TopicRead } from '../../streams/kafka/consume-spa.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import type { KafkaTransport } from '../../infra/kafka/client/transport.js';
import { startWebTap } from '../../web/server/web-tap.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import { spaTopics } from '../../schemas/topics.js';
import { spawnSpa, type SpaProcess } from '../cli/spa-process.js';
import { startTestBroker, stopTestBroker, testConnection } from '../kafka/harness.js';

const ports = { port: 19710, controllerPort: 19711 };
const name = 'hostile-restart';
/** The same instance as startTestBroker's, restarted with its data kept. */
const instance = { ...ports, name: `test-${name}` };

/**
 * How long the broker stays down: past kafkajs' retry budget (about 25 s with the default
 * retries), so its consumer gives up, restarts and rejoins the group as a new member; a shorter
 * outage is ridden out by the same member, whose in-memory position never needed the fix.
 */
const OUTAGE_MS = 35_000;

/** A read being followed: the values it showed, in order, and the lines it logged. */
interface Followed {
  readonly read: TopicRead;
  readonly seen: string[];
  readonly logged: string[];
  stop(): Promise<number>;
}

async function follow(
  kafka: KafkaConnection,
  topic: string,
  start: 'earliest' | 'latest',
): Promise<Followed> {
  const logged: string[] = [];
  const read = await readTopic(kafka, {
    topic,
    start: { kind: start },
    follow: true,
    purpose: 'spa-tap-restart',
    maxInFlight: 8,
    log: (line) => logged.push(line),
  });
  const seen: string[] = [];
  const subscription = read.records.subscribe(({ record, ack }) => {
    seen.push(record.value?.toString() ?? '');
    ack();
  });
  await read.joined;
  return {
    read,
    seen,
    logged,
    async stop() {
      const started = Date.now();
      subscription.unsubscribe();
      await read.closed;
      return Date.now() - started;
    },
  };
}

async function produce(transport: KafkaTransport, topic: string, values: readonly string[]): Promise<void> {
  const sink = await transport.sink({ compression: 'none' });
  try {
    await sink.send(values.map((value) => ({ topic, key: Buffer.from(value), value: Buffer.from(value) })));
  } finally {
    await sink.close();
  }
}

/** Waits until `seen` holds `count` values and nothing more arrives for `quietMs` (or the timeout). */
async function settled(seen: readonly string[], count: number, quietMs = 3000, timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  let since = Date.now();
  while (Date.now() < deadline) {
    if (seen.length !== last) [last, since] = [seen.length, Date.now()];
    else if (seen.length >= count && Date.now() - since >= quietMs) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const batch = (label: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${label}-${i}`);

/** What the taps did across the restart. */
interface Outcome {
  readonly earliest: Followed;
  readonly latest: Followed;
  readonly expected: { readonly earliest: string[]; readonly latest: string[] };
  /** How long stopping each tap took while the broker was down (the CLI's: signal to exit). */
  readonly stopMs: Readonly<Record<'read' | 'web' | 'cliWeb' | 'cliFollow', number>>;
}

/** `spa tap` as a user runs it, ready once it serves (--web) or has printed (--follow). */
async function cliTap(args: readonly string[], brokers: readonly string[]) {
  const tap = spawnSpa(args, brokers);
  let output = '';
  tap.child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  tap.child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const deadline = Date.now() + 120_000;
  while (!/serving|── /.test(output) && tap.child.exitCode === null && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 200));
  return tap;
}

/** Milliseconds from `signal` to the process's exit; SIGKILLed (and 10 s or more) if it takes that long. */
async function exitTimed(tap: SpaProcess, signal: NodeJS.Signals): Promise<number> {
  const started = Date.now();
  tap.child.kill(signal);
  const killer = setTimeout(() => tap.child.kill('SIGKILL'), 10_000);
  await tap.ended;
  clearTimeout(killer);
  return Date.now() - started;
}

/** Before the restart: records, then taps from the history and of new records, then more records. */
async function tapsBeforeRestart(kafka: KafkaConnection) {
  const { brokers } = kafka.config;
  const topic = 'tap-restart';
  const admin = await kafka.transport.admin();
  try {
    await admin.createTopics([{ name: topic, partitions: 2, replicationFactor: 1, configs: {} }]);
  } finally {
    await admin.close();
  }
  const history = batch('history', 12);
  await produce(kafka.transport, topic, history);
  const earliest = await follow(kafka, topic, 'earliest');
  const latest = await follow(kafka, topic, 'latest');
  const before = batch('before', 12);
  await produce(kafka.transport, topic, before);
  await settled(earliest.seen, history.length + before.length, 500);
  await settled(latest.seen, before.length, 500);
  // Taps to stop while the broker is down, as Ctrl-C / SIGTERM would.
  const doomed = await follow(kafka, topic, 'earliest');
  const web = await startWebTap(kafka, { topics: [topic], start: 'latest', port: 0, token: 't' });
  const [cliWeb, cliFollow] = await Promise.all([
    cliTap(['tap', '--web', '--topic', topic], brokers),
    cliTap(['tap', topic, '--follow'], brokers),
  ]);
  return { topic, history, before, earliest, latest, doomed, web, cliWeb, cliFollow };
}

async function stopTimed(stop: () => Promise<unknown>): Promise<number> {
  const started = Date.now();
  await stop();
  return Date.now() - started;
}

let transport: KafkaTransport;
let outcome: Outcome;

// One broker restart under the taps.
beforeAll(async () => {
  const config = testConnection((await startTestBroker(name, ports)).brokers);
  // SPA's topics up front: the `spa tap` processes below apply them at connect, all at once.
  await applyTopicsTo(config.brokers, spaTopics());
  transport = kafkaTransport(config);
  const run = await tapsBeforeRestart({ transport, config });
  const down = Date.now();
  await stopBroker(instance);
  // One at a time, so each is timed alone: SIGTERM ends `spa tap --web`, Ctrl-C `spa tap --follow`.
  const stopMs = {
    read: await stopTimed(run.doomed.stop),
    web: await stopTimed(run.web.stop),
    cliWeb: await exitTimed(run.cliWeb, 'SIGTERM'),
    cliFollow: await exitTimed(run.cliFollow, 'SIGINT'),
  };
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, OUTAGE_MS - (Date.now() - down))));
  // Kept data: the topics, their records and the groups survive, as a real restart's would.
  await startBroker({ ...instance, fresh: false, startTimeoutMs: 180_000, log: () => {} });
  // Written while the taps reconnect: a reset to `latest` skipped these.
  const after = batch('after', 12);
  await produce(transport, run.topic, after);
  const expected = {
    earliest: [...run.history, ...run.before, ...after],
    latest: [...run.before, ...after],
  };
  await Promise.all([
    settled(run.earliest.seen, expected.earliest.length),
    settled(run.latest.seen, expected.latest.length),
  ]);
  await Promise.all([run.earliest.stop(), run.latest.stop()]);
  outcome = { earliest: run.earliest, latest: run.latest, expected, stopMs };
}, 600_000);

afterAll(async () => {
  await transport?.close();
  await stopTestBroker(name, ports);
}, 120_000);

describe('taps across a broker restart', () => {
  it('a tap from the history (earliest) shows each record once across a broker restart', () => {
    expect(outcome.earliest.seen.toSorted()).toEqual(outcome.expected.earliest.sort());
  });

  it('a tap of new records (latest) shows each once, those written while it reconnected included', () => {
    expect(outcome.latest.seen.toSorted()).toEqual(outcome.expected.latest.sort());
  });

  it('says in its log that the connection was lost, and where it resumes once it is back', () => {
    for (const tap of [outcome.earliest, outcome.latest]) {
      const log = tap.logged.join('\n');
      expect(log).toContain('tap-restart: broker connection lost; reconnecting');
      expect(log).toMatch(
        new RegExp(
          `^tap-restart: broker connection lost/regained, resuming at partition 0 offset \\d+, partition 1 offset \\d+$`,
          'm',
        ),
      );
    }
  });

  it('stops within 2 s while the broker is down (a followed read, the web tap)', () => {
    expect(outcome.stopMs.read).toBeLessThan(2000);
    expect(outcome.stopMs.web).toBeLessThan(2000);
  });

  it('`spa tap --web` exits within 2 s of SIGTERM and `spa tap --follow` of Ctrl-C while the broker is down', () => {
    expect(outcome.stopMs.cliWeb).toBeLessThan(2000);
    expect(outcome.stopMs.cliFollow).toBeLessThan(2000);
  });
});
