import { describe, expect, it } from 'vitest';
import {
  kafkaConfigFromEnv,
  kafkaConnectionConfig,
  parseBrokerList,
} from '../../infra/kafka/client-config.js';

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
      kafkaConnectionConfig({ retry: { retries: -1, initialRetryTimeMs: 1, maxRetryTimeMs: 1 } }),
    ).toThrow('retry.retries=-1');
    expect(() =>
      kafkaConnectionConfig({ sasl: { mechanism: 'gssapi' as 'plain', username: 'u', password: 'p' } }),
    ).toThrow('sasl.mechanism="gssapi"');
  });
});
