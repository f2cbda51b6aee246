/**
 * Connection settings for the Kafka transport, read from the environment or given in code,
 * validated so that a bad setting names its field and what would be right. The Python trainer
 * reads the same variables (trainer/spa_trainer/kafka/connection.py); the TLS ones are named after
 * librdkafka's properties (`KAFKA_SSL_CA_LOCATION` is `ssl.ca.location`).
 */
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';

/** SASL credentials (SCRAM for the SASL_PLAINTEXT listener of infra/kafka). */
interface SaslSettings {
  readonly mechanism: 'scram-sha-256' | 'scram-sha-512' | 'plain';
  readonly username: string;
  readonly password: string;
}

/**
 * TLS beyond Node's defaults: PEM files named after librdkafka's properties. A client
 * certificate comes with its key, or neither is given.
 */
interface SslFiles {
  /** `ssl.ca.location`: the CA certificate(s) that signed the brokers'; default: Node's trust store. */
  readonly caLocation?: string;
  /** `ssl.certificate.location`: this client's certificate, for brokers that check clients. */
  readonly certificateLocation?: string;
  /** `ssl.key.location`: its private key. */
  readonly keyLocation?: string;
  /** `ssl.key.password`: the key's password, when the key is encrypted. */
  readonly keyPassword?: string;
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
  /** A CA and/or client certificate for TLS (implies `ssl`). */
  readonly sslFiles?: SslFiles;
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

/**
 * The environment variable of each TLS setting: the name both sides read, so the messages about
 * a bad file name it whether the setting came from the environment or from code.
 */
const sslVariables = {
  caLocation: 'KAFKA_SSL_CA_LOCATION',
  certificateLocation: 'KAFKA_SSL_CERTIFICATE_LOCATION',
  keyLocation: 'KAFKA_SSL_KEY_LOCATION',
  keyPassword: 'KAFKA_SSL_KEY_PASSWORD',
} as const satisfies Record<keyof SslFiles, string>;

/** The text of a PEM file, or an error naming the variable when it is not a readable file. */
function readablePem(field: keyof SslFiles, path: string): string {
  const variable = `${sslVariables[field]}=${path}`;
  try {
    accessSync(path, constants.R_OK);
    if (!statSync(path).isFile()) throw new Error('not a file');
    return readFileSync(path, 'latin1');
  } catch (error) {
    throw new Error(`${variable} is not a readable file (${(error as Error).message})`, { cause: error });
  }
}

/**
 * Checks the TLS files now, so a wrong path fails before any connection with a message naming
 * its variable, not later as a handshake error: each file exists, is readable and holds what it
 * should (a certificate, a private key); certificate and key come together; an encrypted key has
 * its password.
 */
function checkSslFiles(files: SslFiles): SslFiles {
  const { certificateLocation, keyLocation, keyPassword } = files;
  if ((certificateLocation === undefined) !== (keyLocation === undefined))
    throw new Error(
      `${sslVariables.certificateLocation} and ${sslVariables.keyLocation} go together: set both or neither`,
    );
  if (keyPassword !== undefined && keyLocation === undefined)
    throw new Error(`${sslVariables.keyPassword} is set but ${sslVariables.keyLocation} is not`);
  for (const field of ['caLocation', 'certificateLocation'] as const) {
    const path = files[field];
    if (path !== undefined && !readablePem(field, path).includes('-----BEGIN CERTIFICATE-----'))
      throw new Error(
        `${sslVariables[field]}=${path} holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
      );
  }
  if (keyLocation !== undefined) {
    const key = readablePem('keyLocation', keyLocation);
    if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key))
      throw new Error(
        `${sslVariables.keyLocation}=${keyLocation} holds no PEM private key (-----BEGIN PRIVATE KEY-----)`,
      );
    if (/ENCRYPTED/.test(key) && !keyPassword)
      throw new Error(
        `${sslVariables.keyLocation}=${keyLocation} is encrypted; set ${sslVariables.keyPassword}`,
      );
  }
  return files;
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
  const sslFiles = partial.sslFiles && checkSslFiles(partial.sslFiles);
  if (sslFiles && partial.ssl === false)
    throw new Error(
      `KAFKA_SSL=false contradicts ${Object.keys(sslFiles)
        .map((f) => sslVariables[f as keyof SslFiles])
        .join(', ')} (TLS files turn TLS on); unset one or the other`,
    );
  return {
    clientId: partial.clientId ?? 'spa',
    brokers,
    ...(sasl ? { sasl } : {}),
    ssl: partial.ssl ?? sslFiles !== undefined,
    ...(sslFiles ? { sslFiles } : {}),
    retry,
    connectionTimeoutMs: positiveInteger('connectionTimeoutMs', partial.connectionTimeoutMs ?? 3000),
    requestTimeoutMs: positiveInteger('requestTimeoutMs', partial.requestTimeoutMs ?? 30_000),
  };
}

function saslFromEnv(env: NodeJS.ProcessEnv): SaslSettings | undefined {
  const mechanism = env.KAFKA_SASL_MECHANISM?.trim().toLowerCase();
  if (!mechanism) return undefined;
  if (!['scram-sha-256', 'scram-sha-512', 'plain'].includes(mechanism))
    throw new Error(
      `KAFKA_SASL_MECHANISM="${env.KAFKA_SASL_MECHANISM}" must be scram-sha-256, scram-sha-512 or plain`,
    );
  const username = env.KAFKA_SASL_USERNAME ?? '';
  const password = env.KAFKA_SASL_PASSWORD ?? '';
  if (!username) throw new Error('KAFKA_SASL_MECHANISM is set but KAFKA_SASL_USERNAME is empty');
  if (!password) throw new Error('KAFKA_SASL_MECHANISM is set but KAFKA_SASL_PASSWORD is empty');
  return { mechanism: mechanism as SaslSettings['mechanism'], username, password };
}

/** The KAFKA_SSL_* file settings that are set (empty values count as unset). */
function sslFilesFromEnv(env: NodeJS.ProcessEnv): SslFiles | undefined {
  const entries = Object.entries(sslVariables)
    .map(([field, variable]) => [field, env[variable]?.trim()] as const)
    .filter(([, value]) => value);
  return entries.length > 0 ? (Object.fromEntries(entries) as SslFiles) : undefined;
}

/**
 * Reads KAFKA_BROKERS (default 127.0.0.1:9092), KAFKA_CLIENT_ID, KAFKA_SASL_MECHANISM /
 * KAFKA_SASL_USERNAME / KAFKA_SASL_PASSWORD, KAFKA_SSL=true|false and the TLS files
 * KAFKA_SSL_CA_LOCATION, KAFKA_SSL_CERTIFICATE_LOCATION + KAFKA_SSL_KEY_LOCATION and
 * KAFKA_SSL_KEY_PASSWORD (any of them turns TLS on); `overrides` win.
 */
export function kafkaConfigFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<KafkaConnectionConfig> = {},
): KafkaConnectionConfig {
  const ssl = env.KAFKA_SSL?.trim().toLowerCase();
  if (ssl !== undefined && ssl !== 'true' && ssl !== 'false')
    throw new Error(`KAFKA_SSL="${env.KAFKA_SSL}" must be true or false`);
  const sasl = saslFromEnv(env);
  const sslFiles = sslFilesFromEnv(env);
  return kafkaConnectionConfig({
    ...(env.KAFKA_BROKERS?.trim() ? { brokers: parseBrokerList(env.KAFKA_BROKERS) } : {}),
    ...(env.KAFKA_CLIENT_ID ? { clientId: env.KAFKA_CLIENT_ID } : {}),
    ...(sasl ? { sasl } : {}),
    ...(ssl ? { ssl: ssl === 'true' } : {}),
    ...(sslFiles ? { sslFiles } : {}),
    ...overrides,
  });
}

/**
 * Node's TLS options for a config (kafkajs' `ssl`): the PEM files' contents, read when a client is made. Undefined without TLS; `{}` (Node's trust
 * store, no client certificate) when TLS has no files.
 */
export function tlsConnectionOptions(config: KafkaConnectionConfig): ConnectionOptions | undefined {
  if (!config.ssl) return undefined;
  const { caLocation, certificateLocation, keyLocation, keyPassword } = config.sslFiles ?? {};
  return {
    ...(caLocation ? { ca: [readFileSync(caLocation)] } : {}),
    ...(certificateLocation ? { cert: readFileSync(certificateLocation) } : {}),
    ...(keyLocation ? { key: readFileSync(keyLocation) } : {}),
    ...(keyPassword ? { passphrase: keyPassword } : {}),
  };
}
