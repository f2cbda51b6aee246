/**
 * "Does the broker answer?": one metadata round trip (the admin port's `brokers()`, admin.ts),
 * used by start/status and by tests waiting for a restarted broker.
 */
import { connect } from 'node:net';
import type { KafkaAdmin } from './client/admin.js';
import { kafkaConnectionConfig } from './client/config.js';
import { openKafkaAdmin } from './client/kafka-client.js';

/**
 * Asks the brokers for cluster metadata once; resolves true when they answer in time and report
 * at least `minBrokers` live brokers (a cluster's nodes all registered).
 */
export async function brokerAnswers(
  brokers: readonly string[],
  timeoutMs = 2000,
  minBrokers = 1,
): Promise<boolean> {
  let admin: KafkaAdmin | undefined;
  try {
    // No SASL or TLS and no retries: one plain round trip, answered in time or not at all.
    const config = kafkaConnectionConfig({
      clientId: 'spa-broker-probe',
      brokers,
      connectionTimeoutMs: timeoutMs,
      requestTimeoutMs: timeoutMs,
      retry: { retries: 0, initialRetryTimeMs: 300, maxRetryTimeMs: 30_000 },
    });
    admin = await openKafkaAdmin(config);
    return (await admin.brokers()).length >= minBrokers;
  } catch {
    return false;
  } finally {
    await admin?.close().catch(() => undefined);
  }
}

/**
 * Polls until the brokers answer or `timeoutMs` passes. `stillAlive` lets the caller stop
 * early when the process it launched has died; the result says which happened. `onWaiting` is
 * told the seconds waited every 10 s.
 */
export async function waitUntilAnswering(
  brokers: readonly string[],
  timeoutMs: number,
  stillAlive: () => boolean = () => true,
  onWaiting?: (seconds: number) => void,
): Promise<'answering' | 'timeout' | 'died'> {
  const started = Date.now();
  const deadline = started + timeoutMs;
  let told = started;
  while (Date.now() < deadline) {
    if (!stillAlive()) return 'died';
    if (await brokerAnswers(brokers, 1000)) return 'answering';
    // a broker that starts slowly (a busy machine) is said to be awaited every 10 s, not a silent wait
    if (onWaiting && Date.now() - told >= WAITING_NOTE_MS) {
      told = Date.now();
      onWaiting(Math.round((told - started) / 1000));
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return 'timeout';
}

/** How often a wait for a broker says so. */
const WAITING_NOTE_MS = 10_000;

/** Whether a TCP connection to one `host:port` opens within `timeoutMs`. */
function tcpOpens(address: string, timeoutMs: number): Promise<boolean> {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(at + 1));
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Waits until some bootstrap broker accepts a TCP connection (a configured cluster may need
 * SASL/TLS, so only reachability is checked here), calling `onWaiting` once after the first
 * round fails; throws after `timeoutMs` with a message naming the brokers.
 */
export async function waitForReachableBroker(
  brokers: readonly string[],
  timeoutMs: number,
  onWaiting: () => void,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let told = false;
  for (;;) {
    const round = await Promise.all(brokers.map((b) => tcpOpens(b, Math.min(2000, timeoutMs))));
    if (round.some(Boolean)) return;
    if (Date.now() >= deadline)
      throw new Error(
        `no Kafka broker answers at ${brokers.join(',')} after ${Math.round(timeoutMs / 1000)} s ` +
          '(KAFKA_BROKERS); is it running and reachable? `npx spa doctor` checks the setup',
      );
    if (!told) onWaiting();
    told = true;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}
