/**
 * "Does the broker answer?": one metadata round trip (DescribeCluster via kafkajs' admin
 * client), used by start/status and by tests waiting for a restarted broker.
 */
import { Kafka, logLevel } from 'kafkajs';

/** Asks the brokers for cluster metadata once; resolves true when they answer in time. */
export async function brokerAnswers(brokers: readonly string[], timeoutMs = 2000): Promise<boolean> {
  const admin = new Kafka({
    clientId: 'spa-broker-probe',
    brokers: [...brokers],
    connectionTimeout: timeoutMs,
    requestTimeout: timeoutMs,
    retry: { retries: 0 },
    logLevel: logLevel.NOTHING,
  }).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/**
 * Polls until the brokers answer or `timeoutMs` passes. `stillAlive` lets the caller stop
 * early when the process it launched has died; the result says which happened.
 */
export async function waitUntilAnswering(
  brokers: readonly string[],
  timeoutMs: number,
  stillAlive: () => boolean = () => true,
): Promise<'answering' | 'timeout' | 'died'> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!stillAlive()) return 'died';
    if (await brokerAnswers(brokers, 1000)) return 'answering';
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return 'timeout';
}
