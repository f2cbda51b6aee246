/**
 * The two connection failures no retry cures, told apart from an unreachable broker for the
 * client's error rewriting (kafkajs-client.ts) and for `spa doctor`: refused SASL credentials,
 * and TLS (Node puts OpenSSL's verdict in the error's `code`, which a client keeps somewhere in
 * its error chain).
 */
import type { KafkaConnectionConfig } from './config.js';

/** The brokers refused the SASL user (wrong username or password). */
export class KafkaCredentialsRefused extends Error {
  override readonly name = 'KafkaCredentialsRefused';
}

/** A TLS connection to the brokers failed (certificate not trusted, not a TLS listener, …). */
export class KafkaTlsFailure extends Error {
  override readonly name = 'KafkaTlsFailure';
}

/** The message for a refused login: the user, mechanism and brokers. */
export function credentialsRefused(
  sasl: NonNullable<KafkaConnectionConfig['sasl']>,
  config: KafkaConnectionConfig,
  doing: string,
  cause: Error,
): KafkaCredentialsRefused {
  return new KafkaCredentialsRefused(
    `Kafka refused the credentials of SASL user "${sasl.username}" (${sasl.mechanism.toUpperCase()}) ` +
      `on ${config.brokers.join(',')} while ${doing}: wrong username or password`,
    { cause },
  );
}

/** OpenSSL's verdicts that mean "signed by no CA this client trusts" (Node's `code`s). */
const untrusted = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
]);

/** Verdicts about the certificate itself (dates, use, revocation). */
const invalid = new Set([
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_REJECTED',
  'CERT_REVOKED',
  'INVALID_PURPOSE',
]);

interface CodedError {
  readonly code: string;
  readonly message: string;
}

/** Every error below `error`: `cause`, kafkajs' `originalError`, an AggregateError's `errors`. */
function chain(error: unknown, depth = 0): CodedError[] {
  if (typeof error !== 'object' || error === null || depth > 8) return [];
  const { cause, originalError, errors } = error as Record<string, unknown>;
  const below = [cause, originalError, ...(Array.isArray(errors) ? errors : [])];
  return [error as CodedError, ...below.flatMap((e) => chain(e, depth + 1))];
}

function isTlsError({ code, message }: CodedError): boolean {
  if (typeof code !== 'string') return false;
  return (
    untrusted.has(code) ||
    invalid.has(code) ||
    /^ERR_(SSL|TLS)_/.test(code) ||
    (code === 'ECONNRESET' && /secure TLS connection/.test(String(message))) ||
    (code === 'EPROTO' && /SSL|TLS/i.test(String(message)))
  );
}

/**
 * The failure as a message naming the broker list, the TLS setting to look at, OpenSSL's code
 * and what we were doing; undefined when the error is not a TLS failure.
 */
export function describeTlsFailure(
  error: unknown,
  doing: string,
  config: KafkaConnectionConfig,
): KafkaTlsFailure | undefined {
  const tls = chain(error).find(isTlsError);
  if (!tls) return undefined;
  const at = `Kafka at ${config.brokers.join(',')}`;
  const why = `${tls.code}: ${tls.message}`;
  const ca = config.sslFiles?.caLocation;
  const cause = error instanceof Error ? error : undefined;
  if (untrusted.has(tls.code))
    return new KafkaTlsFailure(
      `the TLS certificate of ${at} is not signed by ` +
        (ca
          ? `the CA in KAFKA_SSL_CA_LOCATION=${ca}`
          : 'a CA Node trusts; set KAFKA_SSL_CA_LOCATION to the PEM file of the CA that signed it') +
        ` (${why}) while ${doing}`,
      { cause },
    );
  if (tls.code === 'ERR_TLS_CERT_ALTNAME_INVALID')
    return new KafkaTlsFailure(
      `the TLS certificate of ${at} does not name that host (${why}) while ${doing}`,
      {
        cause,
      },
    );
  if (invalid.has(tls.code))
    return new KafkaTlsFailure(`the TLS certificate of ${at} is not valid (${why}) while ${doing}`, {
      cause,
    });
  return new KafkaTlsFailure(
    `the TLS handshake with ${at} failed (${why}) while ${doing}; is it a TLS listener? ` +
      '(KAFKA_SSL and the KAFKA_SSL_* files turn TLS on)',
    { cause },
  );
}
