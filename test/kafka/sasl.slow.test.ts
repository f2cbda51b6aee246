import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForLeaders } from '../../infra/kafka/topics.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import type { ConsumedRecord } from '../../infra/kafka/client/transport.js';
import { eventually, startTestBroker, stopTestBroker, testConnection } from './harness.js';

const options = {
  port: 19292,
  controllerPort: 19293,
  saslPort: 19294,
  scramUsers: [{ username: 'alice', password: 'alice-secret', mechanism: 'SCRAM-SHA-256' as const }],
};
let saslBrokers: readonly string[];

beforeAll(async () => {
  saslBrokers = (await startTestBroker('sasl', options)).saslBrokers;
});

afterAll(async () => {
  await stopTestBroker('sasl', options);
});

describe('SASL/SCRAM listener', () => {
  it('accepts the right password: admin, produce and consume over SCRAM-SHA-256', async () => {
    const topic = 'secured';
    const config = testConnection(saslBrokers, {
      sasl: { mechanism: 'scram-sha-256', username: 'alice', password: 'alice-secret' },
    });
    const transport = kafkaTransport(config);
    try {
      const admin = await transport.admin();
      await admin.createTopics([{ name: topic, partitions: 1, replicationFactor: 1, configs: {} }]);
      await waitForLeaders(admin, [topic]);
      await admin.close();
      const sink = await transport.sink();
      await sink.send([{ topic, key: Buffer.from('k'), value: Buffer.from('hello over scram') }]);
      const source = await transport.source({
        groupId: 'secured-g',
        topics: [topic],
        start: { kind: 'earliest' },
      });
      const records: ConsumedRecord[] = [];
      await source.run(async (batch) => void records.push(...batch.records));
      await eventually(() => records.length >= 1, 60_000, 'the record over SASL');
      expect(records.map((r) => r.value?.toString())).toEqual(['hello over scram']);
    } finally {
      await transport.close();
    }
  });

  it('refuses a wrong password with an error naming the user, the mechanism and the cause', async () => {
    const config = testConnection(saslBrokers, {
      sasl: { mechanism: 'scram-sha-256', username: 'alice', password: 'not-her-password' },
      // One retry: the idempotent producer needs retries >= 1; a refused login is not retried.
      retry: { retries: 1, initialRetryTimeMs: 100, maxRetryTimeMs: 100 },
    });
    const transport = kafkaTransport(config);
    try {
      await expect(transport.sink()).rejects.toThrow(
        /refused the credentials of SASL user "alice" \(SCRAM-SHA-256\) on 127\.0\.0\.1:19294 .*wrong username or password/,
      );
      await expect(transport.admin()).rejects.toThrow(/wrong username or password/);
    } finally {
      await transport.close();
    }
  });

  it('refuses an unknown user the same way', async () => {
    const config = testConnection(saslBrokers, {
      sasl: { mechanism: 'scram-sha-256', username: 'mallory', password: 'alice-secret' },
      retry: { retries: 0, initialRetryTimeMs: 100, maxRetryTimeMs: 100 },
    });
    const transport = kafkaTransport(config);
    try {
      await expect(transport.admin()).rejects.toThrow(/SASL user "mallory".*wrong username or password/);
    } finally {
      await transport.close();
    }
  });
});
