/**
 * The kafkajs client built from a {@link KafkaConnectionConfig}, shared by the admin port's
 * kafkajs implementation (kafkajs-admin.ts) and the pipeline's transport (kafkajs-adapter.ts),
 * and kafkajs errors rewritten so they say what went wrong
 * in our terms.
 */
import { Kafka, logLevel } from 'kafkajs';
import type { Admin, KafkaConfig, LogEntry } from 'kafkajs';
import { tlsConnectionOptions } from './config.js';
import type { KafkaConnectionConfig } from './config.js';
import { credentialsRefused, describeTlsFailure } from './connect-failure.js';

// kafkajs logs retriable errors at ERROR level while it retries them; only warn-level and
// worse lines that survive the retries are worth a user's attention, and they go to stderr.
function logCreator(): (entry: LogEntry) => void {
  return ({ namespace, label, log }) => {
    if (label === 'WARN' || label === 'ERROR')
      console.error(`[kafkajs ${label.toLowerCase()}] ${namespace}: ${log.message}`);
  };
}

/** The kafkajs client for a connection config. `quiet` silences kafkajs' own logging. */
export function kafkajsClient(config: KafkaConnectionConfig, quiet = true): Kafka {
  const kafkaConfig: KafkaConfig = {
    clientId: config.clientId,
    brokers: [...config.brokers],
    ssl: tlsConnectionOptions(config) ?? false,
    connectionTimeout: config.connectionTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    retry: {
      retries: config.retry.retries,
      initialRetryTime: config.retry.initialRetryTimeMs,
      maxRetryTime: config.retry.maxRetryTimeMs,
    },
    logLevel: quiet ? logLevel.NOTHING : logLevel.WARN,
    logCreator: () => logCreator(),
  };
  if (config.sasl) {
    const { mechanism, username, password } = config.sasl;
    // kafkajs' SASLOptions is a union keyed by the mechanism literal.
    kafkaConfig.sasl =
      mechanism === 'plain'
        ? { mechanism, username, password }
        : mechanism === 'scram-sha-256'
          ? { mechanism, username, password }
          : { mechanism, username, password };
  }
  return new Kafka(kafkaConfig);
}

/**
 * Rewrites kafkajs errors whose own message is unhelpful. A SASL failure names the user,
 * mechanism and brokers and says the credentials were refused; a TLS failure says which
 * (connect-failure.ts); other errors keep their message, prefixed with what we were doing.
 */
export function describeKafkaError(error: unknown, doing: string, config: KafkaConnectionConfig): Error {
  const cause = error instanceof Error ? error : new Error(String(error));
  if (cause.name === 'KafkaJSSASLAuthenticationError' && config.sasl) {
    return credentialsRefused(config.sasl, config, doing, cause);
  }
  const tls = describeTlsFailure(cause, doing, config);
  if (tls) return tls;
  if (cause.name === 'KafkaJSNumberOfRetriesExceeded' || cause.name === 'KafkaJSConnectionError') {
    return new Error(`cannot reach Kafka at ${config.brokers.join(',')} while ${doing}: ${cause.message}`, {
      cause,
    });
  }
  return new Error(`Kafka error while ${doing}: ${cause.message}`, { cause });
}

/**
 * A connected kafkajs admin client, made from `kafka` (default: a client of its own); the
 * caller disconnects it. The pipeline reaches it through the admin port (kafkajs-admin.ts);
 * tests that drive kafkajs directly use it as it is. A failed connect is disconnected too, so a
 * probe polling a broker that is down leaves nothing open.
 */
export async function connectKafkajsAdmin(
  config: KafkaConnectionConfig,
  kafka: Kafka = kafkajsClient(config),
): Promise<Admin> {
  const admin = kafka.admin();
  try {
    await admin.connect();
  } catch (error) {
    await admin.disconnect().catch(() => undefined);
    throw describeKafkaError(error, 'connecting the admin client', config);
  }
  return admin;
}
