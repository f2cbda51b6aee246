/**
 * Connection settings for the Kafka transport, read from the environment or given in code,
 * validated so that a bad setting names its field and what would be right.
 */

/** SASL credentials (SCRAM for the SASL_PLAINTEXT listener of infra/kafka). */
interface SaslSettings {
  readonly mechanism: 'scram-sha-256' | 'scram-sha-512' | 'plain';
  readonly username: string;
  readonly password: string;
}

/** Client-side retries of retriable errors (exponential backoff). */
interface RetrySettings {
  readonly retries: number;
  readonly initialRetryTimeMs: number;
  readonly maxRetryTimeMs: number;
}

/** Everything an adapter needs to reach the cluster. */
export interface KafkaConnectionConfig {
  readonly clientId: string;
  readonly brokers: readonly string[];
  readonly sasl?: SaslSettings;
  /** TLS to the brokers. */
  readonly ssl: boolean;
  readonly retry: RetrySettings;
  readonly connectionTimeoutMs: number;
  readonly requestTimeoutMs: number;
}

/** The local broker of infra/kafka. */
const defaultBrokers: readonly string[] = ['127.0.0.1:9092'];

/** Defaults chosen to ride out a broker restart (~10 s of retries) without giving up. */
const defaultRetry: RetrySettings = { retries: 8, initialRetryTimeMs: 300, maxRetryTimeMs: 5000 };

/** Splits "host:port,host:port", naming `field` and the bad entry when malformed. */
export function parseBrokerList(value: string, field = 'KAFKA_BROKERS'): string[] {
  const brokers = value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  if (brokers.length === 0)
    throw new Error(`${field}="${value}" names no broker; expected host:port[,host:port]`);
  for (const broker of brokers) {
    const port = Number(/:(\d+)$/.exec(broker)?.[1]);
    if (!/^[^\s:]+:\d+$/.test(broker) || port < 1 || port > 65535)
      throw new Error(
        `${field} entry "${broker}" is not host:port with a port 1..65535 (e.g. 127.0.0.1:9092)`,
      );
  }
  return brokers;
}

function positiveInteger(field: string, value: number, allowZero = false): number {
  if (!Number.isInteger(value) || value < (allowZero ? 0 : 1))
    throw new Error(`${field}=${value} must be an integer ${allowZero ? '>= 0' : '>= 1'}`);
  return value;
}

/** Fills defaults and checks every field; throws naming the first bad one. */
export function kafkaConnectionConfig(partial: Partial<KafkaConnectionConfig> = {}): KafkaConnectionConfig {
  const retry = { ...defaultRetry, ...partial.retry };
  positiveInteger('retry.retries', retry.retries, true);
  positiveInteger('retry.initialRetryTimeMs', retry.initialRetryTimeMs);
  positiveInteger('retry.maxRetryTimeMs', retry.maxRetryTimeMs);
  const brokers = partial.brokers ?? defaultBrokers;
  parseBrokerList(brokers.join(','), 'brokers');
  const sasl = partial.sasl;
  if (sasl) {
    if (!['scram-sha-256', 'scram-sha-512', 'plain'].includes(sasl.mechanism))
      throw new Error(`sasl.mechanism="${sasl.mechanism}" must be scram-sha-256, scram-sha-512 or plain`);
    if (!sasl.username) throw new Error('sasl.username is empty; give the SCRAM user name');
    if (!sasl.password) throw new Error(`sasl.password is empty for user "${sasl.username}"`);
  }
  return {
    clientId: partial.clientId ?? 'spa',
    brokers,
    ...(sasl ? { sasl } : {}),
    ssl: partial.ssl ?? false,
    retry,
    connectionTimeoutMs: positiveInteger('connectionTimeoutMs', partial.connectionTimeoutMs ?? 3000),
    requestTimeoutMs: positiveInteger('requestTimeoutMs', partial.requestTimeoutMs ?? 30_000),
  };
}

function saslFromEnv(env: NodeJS.ProcessEnv): SaslSettings | undefined {
  const mechanism = env.KAFKA_SASL_MECHANISM?.trim().toLowerCase();
  if (!mechanism) return undefined;
  const username = env.KAFKA_SASL_USERNAME ?? '';
  const password = env.KAFKA_SASL_PASSWORD ?? '';
  if (!username) throw new Error('KAFKA_SASL_MECHANISM is set but KAFKA_SASL_USERNAME is empty');
  if (!password) throw new Error('KAFKA_SASL_MECHANISM is set but KAFKA_SASL_PASSWORD is empty');
  return { mechanism: mechanism as SaslSettings['mechanism'], username, password };
}

/**
 * Reads KAFKA_BROKERS (default 127.0.0.1:9092), KAFKA_CLIENT_ID, KAFKA_SASL_MECHANISM /
 * KAFKA_SASL_USERNAME / KAFKA_SASL_PASSWORD and KAFKA_SSL=true|false; `overrides` win.
 */
export function kafkaConfigFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<KafkaConnectionConfig> = {},
): KafkaConnectionConfig {
  const ssl = env.KAFKA_SSL?.trim().toLowerCase();
  if (ssl !== undefined && ssl !== 'true' && ssl !== 'false')
    throw new Error(`KAFKA_SSL="${env.KAFKA_SSL}" must be true or false`);
  const sasl = saslFromEnv(env);
  return kafkaConnectionConfig({
    ...(env.KAFKA_BROKERS?.trim() ? { brokers: parseBrokerList(env.KAFKA_BROKERS) } : {}),
    ...(env.KAFKA_CLIENT_ID ? { clientId: env.KAFKA_CLIENT_ID } : {}),
    ...(sasl ? { sasl } : {}),
    ...(ssl ? { ssl: ssl === 'true' } : {}),
    ...overrides,
  });
}
