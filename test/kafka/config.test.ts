import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  kafkaConfigFromEnv,
  kafkaConnectionConfig,
  parseBrokerList,
  tlsConnectionOptions,
} from '../../infra/kafka/client/config.js';
import { describeKafkaError } from '../../infra/kafka/client/kafkajs-client.js';

describe('Kafka connection config', () => {
  it('defaults to the local broker and reads KAFKA_BROKERS and SASL from the environment', () => {
    expect(kafkaConfigFromEnv({}).brokers).toEqual(['127.0.0.1:9092']);
    const config = kafkaConfigFromEnv({
      KAFKA_BROKERS: ' kafka-1:9092, kafka-2:9093 ',
      KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
      KAFKA_SASL_USERNAME: 'trainer',
      KAFKA_SASL_PASSWORD: 's3cret',
      KAFKA_SSL: 'true',
    });
    expect(config.brokers).toEqual(['kafka-1:9092', 'kafka-2:9093']);
    expect(config.sasl).toEqual({ mechanism: 'scram-sha-512', username: 'trainer', password: 's3cret' });
    expect(config.ssl).toBe(true);
  });

  it('names the bad field and what would be right', () => {
    expect(() => parseBrokerList('localhost')).toThrow('KAFKA_BROKERS entry "localhost" is not host:port');
    expect(() => parseBrokerList('a:70000')).toThrow('port 1..65535');
    expect(() => parseBrokerList(' , ')).toThrow('names no broker');
    expect(() => kafkaConfigFromEnv({ KAFKA_SSL: 'yes' })).toThrow('KAFKA_SSL="yes" must be true or false');
    expect(() => kafkaConfigFromEnv({ KAFKA_SASL_MECHANISM: 'scram-sha-256' })).toThrow(
      'KAFKA_SASL_USERNAME is empty',
    );
    expect(() =>
      kafkaConfigFromEnv({
        KAFKA_SASL_MECHANISM: 'GSSAPI',
        KAFKA_SASL_USERNAME: 'u',
        KAFKA_SASL_PASSWORD: 'p',
      }),
    ).toThrow('KAFKA_SASL_MECHANISM="GSSAPI" must be scram-sha-256, scram-sha-512 or plain');
    expect(() =>
      kafkaConnectionConfig({ retry: { retries: -1, initialRetryTimeMs: 1, maxRetryTimeMs: 1 } }),
    ).toThrow('retry.retries=-1');
    expect(() =>
      kafkaConnectionConfig({ sasl: { mechanism: 'gssapi' as 'plain', username: 'u', password: 'p' } }),
    ).toThrow('sasl.mechanism="gssapi"');
  });
});

describe('TLS settings (KAFKA_SSL_*, named after librdkafka ssl.*.location)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'spa-tls-config-'));
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return join(dir, name);
  };
  // Only the PEM markers are checked at config time; the contents are never parsed here.
  const ca = file('ca.pem', '-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n');
  const cert = file('client.pem', '-----BEGIN CERTIFICATE-----\nY2VydA==\n-----END CERTIFICATE-----\n');
  const key = file('client.key', '-----BEGIN PRIVATE KEY-----\na2V5\n-----END PRIVATE KEY-----\n');
  const encrypted = file(
    'enc.key',
    '-----BEGIN ENCRYPTED PRIVATE KEY-----\nZQ==\n-----END ENCRYPTED PRIVATE KEY-----\n',
  );
  const notPem = file('truststore.jks', '\xfe\xed\xfe\xed binary keystore');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the CA, client certificate, key and password; any of them turns TLS on', () => {
    const config = kafkaConfigFromEnv({
      KAFKA_SSL_CA_LOCATION: ca,
      KAFKA_SSL_CERTIFICATE_LOCATION: cert,
      KAFKA_SSL_KEY_LOCATION: encrypted,
      KAFKA_SSL_KEY_PASSWORD: 'pw',
    });
    expect(config.ssl).toBe(true);
    expect(config.sslFiles).toEqual({
      caLocation: ca,
      certificateLocation: cert,
      keyLocation: encrypted,
      keyPassword: 'pw',
    });
    expect(kafkaConfigFromEnv({ KAFKA_SSL_CA_LOCATION: ca }).ssl).toBe(true);
    expect(kafkaConfigFromEnv({ KAFKA_SSL_CA_LOCATION: '' }).ssl).toBe(false);
  });

  it('hands the client the files contents as Node TLS options', () => {
    const config = kafkaConfigFromEnv({
      KAFKA_SSL_CA_LOCATION: ca,
      KAFKA_SSL_CERTIFICATE_LOCATION: cert,
      KAFKA_SSL_KEY_LOCATION: key,
    });
    const expected = {
      ca: [Buffer.from('-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n')],
      cert: Buffer.from('-----BEGIN CERTIFICATE-----\nY2VydA==\n-----END CERTIFICATE-----\n'),
      key: Buffer.from('-----BEGIN PRIVATE KEY-----\na2V5\n-----END PRIVATE KEY-----\n'),
    };
    expect(tlsConnectionOptions(config)).toEqual(expected);
    expect(tlsConnectionOptions(kafkaConnectionConfig({ ssl: true }))).toEqual({});
    expect(tlsConnectionOptions(kafkaConnectionConfig({}))).toBeUndefined();
  });

  it('checks the files at config time, naming the variable', () => {
    const missing = join(dir, 'nope.pem');
    expect(() => kafkaConfigFromEnv({ KAFKA_SSL_CA_LOCATION: missing })).toThrow(
      `KAFKA_SSL_CA_LOCATION=${missing} is not a readable file (ENOENT`,
    );
    expect(() => kafkaConfigFromEnv({ KAFKA_SSL_CA_LOCATION: dir })).toThrow(
      `KAFKA_SSL_CA_LOCATION=${dir} is not a readable file (not a file)`,
    );
    expect(() => kafkaConfigFromEnv({ KAFKA_SSL_CA_LOCATION: notPem })).toThrow(
      `KAFKA_SSL_CA_LOCATION=${notPem} holds no PEM certificate`,
    );
    expect(() => kafkaConfigFromEnv({ KAFKA_SSL_CERTIFICATE_LOCATION: cert })).toThrow(
      'KAFKA_SSL_CERTIFICATE_LOCATION and KAFKA_SSL_KEY_LOCATION go together: set both or neither',
    );
    expect(() => kafkaConfigFromEnv({ KAFKA_SSL_KEY_LOCATION: key })).toThrow('go together');
    expect(() =>
      kafkaConfigFromEnv({ KAFKA_SSL_CERTIFICATE_LOCATION: cert, KAFKA_SSL_KEY_LOCATION: cert }),
    ).toThrow(`KAFKA_SSL_KEY_LOCATION=${cert} holds no PEM private key`);
    expect(() =>
      kafkaConfigFromEnv({ KAFKA_SSL_CERTIFICATE_LOCATION: cert, KAFKA_SSL_KEY_LOCATION: encrypted }),
    ).toThrow(`KAFKA_SSL_KEY_LOCATION=${encrypted} is encrypted; set KAFKA_SSL_KEY_PASSWORD`);
    expect(() => kafkaConfigFromEnv({ KAFKA_SSL_KEY_PASSWORD: 'pw' })).toThrow(
      'KAFKA_SSL_KEY_PASSWORD is set but KAFKA_SSL_KEY_LOCATION is not',
    );
    expect(() => kafkaConfigFromEnv({ KAFKA_SSL: 'false', KAFKA_SSL_CA_LOCATION: ca })).toThrow(
      'KAFKA_SSL=false contradicts KAFKA_SSL_CA_LOCATION',
    );
  });
});

describe('a TLS failure says so', () => {
  const config = kafkaConnectionConfig({ brokers: ['127.0.0.1:19723'], ssl: true });
  /** Node's error as kafkajs wraps it, in `originalError`. */
  const nodeError = (code: string, message: string) => Object.assign(new Error(message), { code });
  const kafkajsError = (inner: Error) =>
    Object.assign(new Error(inner.message), { name: 'KafkaJSNumberOfRetriesExceeded', originalError: inner });
  const explain = (e: Error) => describeKafkaError(kafkajsError(e), 'connecting', config);

  it('an untrusted certificate names KAFKA_SSL_CA_LOCATION; a plaintext listener names TLS', () => {
    expect(
      explain(nodeError('UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'unable to verify the first certificate')).message,
    ).toBe(
      'the TLS certificate of Kafka at 127.0.0.1:19723 is not signed by a CA Node trusts; set ' +
        'KAFKA_SSL_CA_LOCATION to the PEM file of the CA that signed it (UNABLE_TO_VERIFY_LEAF_SIGNATURE: ' +
        'unable to verify the first certificate) while connecting',
    );
    expect(
      explain(
        nodeError(
          'ECONNRESET',
          'Client network socket disconnected before secure TLS connection was established',
        ),
      ).message,
    ).toMatch(
      /^the TLS handshake with Kafka at 127\.0\.0\.1:19723 failed \(ECONNRESET: .*is it a TLS listener\?/,
    );
    expect(
      explain(nodeError('ERR_TLS_CERT_ALTNAME_INVALID', "IP: 10.0.0.1 is not in the cert's list")).message,
    ).toMatch(/does not name that host/);
    expect(explain(nodeError('ECONNREFUSED', 'connect ECONNREFUSED')).message).not.toMatch(/TLS/);
  });
});
