/**
 * The @platformatic/kafka client options built from a {@link KafkaConnectionConfig}, shared by
 * the admin port's platformatic implementation (platformatic-admin.ts) and the second transport
 * adapter (streams/kafka/platformatic-adapter.ts), and its errors told apart and rewritten in our
 * terms, as kafkajs-client.ts does for kafkajs.
 */
import { GenericError, SASLMechanisms } from '@platformatic/kafka';
import type { BaseOptions, SASLOptions } from '@platformatic/kafka';
import { tlsConnectionOptions } from './client-config.js';
import type { KafkaConnectionConfig } from './client-config.js';
import { credentialsRefused, describeTlsFailure } from './connect-failure.js';

/** Our SASL mechanism names as the library spells them; all three are supported. */
const saslMechanisms = {
  plain: SASLMechanisms.PLAIN,
  'scram-sha-256': SASLMechanisms.SCRAM_SHA_256,
  'scram-sha-512': SASLMechanisms.SCRAM_SHA_512,
} as const;

/**
 * The wait before retry `attempt` (1-based) of an operation: `firstRetryMs` for the first, then
 * the config's exponential backoff (`initialRetryTimeMs`, doubling, capped at `maxRetryTimeMs`),
 * which is how kafkajs spaces its retries too.
 */
export function retryDelayMs(config: KafkaConnectionConfig, attempt: number, firstRetryMs?: number): number {
  const { initialRetryTimeMs, maxRetryTimeMs } = config.retry;
  if (firstRetryMs !== undefined) {
    if (attempt <= 1) return firstRetryMs;
    attempt -= 1;
  }
  return Math.min(initialRetryTimeMs * 2 ** Math.max(0, attempt - 1), maxRetryTimeMs);
}

/**
 * Options every platformatic client (producer, consumer, admin) gets for a connection config:
 * brokers, client id, connect and request timeouts, retries with the config's backoff, SASL
 * (PLAIN, SCRAM-SHA-256/512) and TLS (the config's CA and client certificate, else Node's
 * defaults). `firstRetryMs` shortens
 * the first retry's wait (the sink's, see platformatic-sink.ts).
 */
export function platformaticBaseOptions(
  config: KafkaConnectionConfig,
  firstRetryMs?: number,
): BaseOptions & { requestTimeout: number } {
  const tls = tlsConnectionOptions(config);
  const sasl: SASLOptions | undefined = config.sasl && {
    mechanism: saslMechanisms[config.sasl.mechanism],
    username: config.sasl.username,
    password: config.sasl.password,
  };
  return {
    clientId: config.clientId,
    bootstrapBrokers: [...config.brokers],
    connectTimeout: config.connectionTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    // The broker-side timeout of requests that wait (e.g. CreateTopics); the producer sets its own.
    timeout: config.requestTimeoutMs,
    retries: config.retry.retries,
    retryDelay: (_client, _operation, attempt) => retryDelayMs(config, attempt, firstRetryMs),
    autocreateTopics: false,
    ...(sasl ? { sasl } : {}),
    ...(tls ? { tls } : {}),
  };
}

/** Every error in a platformatic error's chain (its own `errors` of a MultipleErrors, and causes). */
function errorChain(error: unknown, depth = 0): unknown[] {
  if (typeof error !== 'object' || error === null || depth > 6) return [];
  const { errors, cause } = error as { errors?: unknown; cause?: unknown };
  const nested = Array.isArray(errors) ? errors.flatMap((e) => errorChain(e, depth + 1)) : [];
  return [error, ...nested, ...errorChain(cause, depth + 1)];
}

/** Whether some error in the chain has `property === value` (the library's `findBy`, also across causes). */
export function platformaticErrorHas(error: unknown, property: string, value: unknown): boolean {
  return errorChain(error).some((e) => (e as Record<string, unknown>)[property] === value);
}

/**
 * Whether a platformatic error is worth retrying: the library's own rule (no error in the chain
 * says `canRetry: false`), plus its timeouts and network errors, which it marks final once its
 * own retries are spent, yet which a broker restart or a moving coordinator explains.
 */
export function isPlatformaticRetriable(error: unknown): boolean {
  if (!(error instanceof Error) || !GenericError.isGenericError(error)) return false;
  if (platformaticErrorHas(error, 'code', 'PLT_KFK_AUTHENTICATION')) return false;
  if (platformaticErrorHas(error, 'code', 'PLT_KFK_USER')) return false;
  if (platformaticErrorHas(error, 'code', 'PLT_KFK_NETWORK')) return true; // timeouts use this code too
  return !platformaticErrorHas(error, 'canRetry', false);
}

/**
 * Marks a retriable platformatic error `retriable: true`, the flag kafkajs sets and
 * `retryWhileRetriable` (streams/kafka/retriable.ts) and the admin port's callers look for; the
 * error itself is passed on untouched otherwise.
 */
export function flagRetriable<E>(error: E): E {
  if (error instanceof Error && isPlatformaticRetriable(error))
    Object.defineProperty(error, 'retriable', { value: true, enumerable: false, configurable: true });
  return error;
}

/**
 * Rewrites platformatic errors whose own message is unhelpful ("Received response with error
 * while executing API …"): a refused login names the user, mechanism and brokers; a TLS failure
 * says which (connect-failure.ts); an unreachable
 * cluster names the brokers; anything else keeps its message and the first protocol error's name,
 * prefixed with what we were doing.
 */
export function describePlatformaticError(
  error: unknown,
  doing: string,
  config: KafkaConnectionConfig,
): Error {
  const cause = error instanceof Error ? error : new Error(String(error));
  if (config.sasl && platformaticErrorHas(cause, 'code', 'PLT_KFK_AUTHENTICATION')) {
    return credentialsRefused(config.sasl, config, doing, cause);
  }
  const tls = describeTlsFailure(cause, doing, config);
  if (tls) return tls;
  const protocolError = errorChain(cause).find(
    (e) => typeof (e as { apiId?: unknown }).apiId === 'string',
  ) as { apiId: string; message: string } | undefined;
  if (!protocolError && platformaticErrorHas(cause, 'code', 'PLT_KFK_NETWORK')) {
    return new Error(`cannot reach Kafka at ${config.brokers.join(',')} while ${doing}: ${cause.message}`, {
      cause,
    });
  }
  const detail = protocolError ? ` (${protocolError.apiId}: ${protocolError.message})` : '';
  return new Error(`Kafka error while ${doing}: ${cause.message}${detail}`, { cause });
}
