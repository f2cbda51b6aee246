/**
 * Test brokers: real KRaft brokers from infra/kafka on their own ports and data dirs
 * (infra/kafka/data/test-<name>), so tests never touch a user's broker on 9092.
 */
import { createServer } from 'node:net';
import { startBroker, stopBroker } from '../../infra/kafka/broker.js';
import type { BrokerStartOptions, RunningBroker } from '../../infra/kafka/broker.js';
import { kafkaConnectionConfig } from '../../infra/kafka/client/config.js';
import type { KafkaConnectionConfig } from '../../infra/kafka/client/config.js';

/**
 * Starts a fresh instance `test-<name>` (wiping its data) with a generous timeout for a busy CI box,
 * of the pinned Kafka release unless `options.kafkaVersion` (or SPA_KAFKA_VERSION) names another.
 */
export function startTestBroker(name: string, options: BrokerStartOptions): Promise<RunningBroker> {
  return startBroker({
    startTimeoutMs: 180_000,
    log: () => {},
    ...options,
    name: `test-${name}`,
    fresh: true,
  });
}

/** Stops `test-<name>`. */
export async function stopTestBroker(name: string, options: BrokerStartOptions): Promise<void> {
  await stopBroker({ ...options, name: `test-${name}` });
}

/** A connection config for tests: quick to fail on connect, patient with retries. */
export function testConnection(
  brokers: readonly string[],
  extra: Partial<KafkaConnectionConfig> = {},
): KafkaConnectionConfig {
  return kafkaConnectionConfig({ clientId: 'spa-test', brokers, ...extra });
}

/** Polls `check` until it returns true or `timeoutMs` passes. */
export async function eventually(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A port nothing listens on: bound once, then released. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
