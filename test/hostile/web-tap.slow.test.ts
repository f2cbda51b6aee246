/**
 * `spa tap --web` against a dead-letter topic holding odd records between good ones (issue 33
 * item 1): the dead letter that used to end the tap on every start, garbage bytes, a truncated
 * frame and a tombstone. Every good record reaches the page once, each odd one as a card saying
 * why, and the tap stays up — on the first start and on a restart that re-reads them all.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Trajectory } from '../../schemas/index.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import type { KafkaConnection } from '../../streams/kafka/consume-spa.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import { toKafkaRecord } from '../../streams/kafka/spa-records.js';
import { startWebTap, type WebTap } from '../../web/server/web-tap.js';
import type { WebRecord } from '../../web/server/web-record.js';
import { GOLDEN_SAMPLES } from '../fixtures/avro/samples.js';
import { startTestBroker, stopTestBroker, testConnection } from '../kafka/harness.js';
import { readEvents, signIn } from '../web/tap-http.js';
import { evilDeadLetter } from './web-tap-records.js';

const ports = { port: 19700, controllerPort: 19701 };
const BROKER = 'hostile-web';
let brokers: readonly string[];

const sample = GOLDEN_SAMPLES['Trajectory.v1'] as Trajectory;
const good = (id: string): Trajectory => ({ ...sample, trajectory_id: id, group_id: `${id}/g` });
/** Seeded random bytes: the same garbage on every run. */
const [randomBytes] = fc.sample(fc.uint8Array({ minLength: 64, maxLength: 64 }), { seed: 33, numRuns: 1 });

beforeAll(async () => {
  brokers = (await startTestBroker(BROKER, ports)).brokers;
});

afterAll(async () => {
  await stopTestBroker(BROKER, ports);
});

describe('spa tap --web over odd dead letters', () => {
  const topic = 'hostile.dlq';
  const odd = ['evil', 'random', 'text', 'truncated', 'tombstone'];
  let kafka: KafkaConnection;
  let tap: WebTap | undefined;

  beforeAll(async () => {
    const config = testConnection(brokers);
    kafka = { transport: kafkaTransport(config), config };
    await applyTopicsTo(brokers, [
      { role: 'dlq', name: topic, partitions: 1, replicationFactor: 1, configs: {} },
    ]);
    const sink = await kafka.transport.sink();
    const key = (k: string) => Buffer.from(k);
    // One partition, in this order: the odd records sit between the two good ones.
    await sink.send([
      toKafkaRecord({ topic: 'trajectories', key: 'good-1', record: good('good-1') }, topic),
      evilDeadLetter(topic),
      { topic, key: key('random'), value: Buffer.from(randomBytes!) },
      { topic, key: key('text'), value: Buffer.from('{"not":"avro"}') },
      { topic, key: key('truncated'), value: Buffer.from([0xc3, 0x01, 0x00]) },
      { topic, key: key('tombstone'), value: null },
      toKafkaRecord({ topic: 'trajectories', key: 'good-2', record: good('good-2') }, topic),
    ]);
    await sink.close();
  });

  afterAll(async () => {
    await tap?.stop();
    await kafka?.transport.close();
  });

  /** Starts the tap on `topic` and reads every record event it has for the page. */
  async function cardsOfFreshTap(): Promise<WebRecord[]> {
    tap = await startWebTap(kafka, { topics: [topic], start: 'earliest', port: 0, statsIntervalMs: 200 });
    const cookie = await signIn(tap.url);
    const events = await readEvents(
      new URL('/events', tap.url).href,
      7,
      { cookie },
      (e) => e.event === 'record',
    );
    return events.filter((e) => e.event === 'record').map((e) => e.data as WebRecord);
  }

  /** The tap is still serving, its reads have not failed, and the stats count all seven records. */
  async function expectStillUp(): Promise<void> {
    const failed = await Promise.race([
      tap!.failed.then(
        () => 'resolved',
        (error: unknown) => `failed: ${String(error)}`,
      ),
      new Promise((resolve) => setTimeout(() => resolve('up'), 1500)),
    ]);
    expect(failed).toBe('up');
    const cookie = await signIn(tap!.url);
    const stats = await readEvents(
      new URL('/events', tap!.url).href,
      1,
      { cookie },
      (e) => e.event === 'stats',
    );
    expect(stats.at(-1)!.data).toMatchObject({
      read: 7,
      byKind: { Trajectory: 2, Rejected: 1, Undecodable: 4 },
    });
  }

  function expectCards(cards: readonly WebRecord[]): void {
    expect(cards.map((c) => c.source.key)).toEqual(['good-1', ...odd, 'good-2']);
    const trajectories = cards.flatMap((c) => (c.kind === 'Trajectory' ? [c.trajectory.trajectoryId] : []));
    expect(trajectories).toEqual(['good-1', 'good-2']); // each good record once
    const [evil, ...garbage] = cards.slice(1, -1);
    if (evil?.kind !== 'Rejected') throw new Error(`evil dead letter shown as ${evil?.kind}`);
    expect(evil.payloadTrajectory).toBeNull();
    expect(evil.payloadNote).toMatch(/^JSON, but not a trajectory \(group_id: missing/);
    expect(garbage.map((c) => (c.kind === 'Undecodable' ? c.rejected.reason : c.kind))).toEqual([
      'bad-magic',
      'bad-magic',
      'truncated',
      'truncated',
    ]);
  }

  it('shows each good record once and each odd one as a card saying why, and stays up', async () => {
    expectCards(await cardsOfFreshTap());
    await expectStillUp();
  });

  it('does the same after a restart that re-reads them all', async () => {
    await tap!.stop();
    tap = undefined;
    expectCards(await cardsOfFreshTap());
    await expectStillUp();
  });
});
