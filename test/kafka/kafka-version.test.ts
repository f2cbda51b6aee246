import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startBroker } from '../../infra/kafka/broker.js';
import { jarsDir, kafkaVersion, pinnedKafkaVersion } from '../../infra/kafka/jars.js';

const dataRoot = mkdtempSync(join(tmpdir(), 'spa-kafka-version-'));
afterAll(() => rmSync(dataRoot, { recursive: true, force: true }));

describe('which Apache Kafka release runs', () => {
  it('is a Kafka 4 release by default, pinned once in pom.xml', () => {
    expect(pinnedKafkaVersion()).toMatch(/^4\.\d+\.\d+$/);
    expect(kafkaVersion(undefined, {})).toBe(pinnedKafkaVersion());
  });

  it('is SPA_KAFKA_VERSION when set, or what a caller asks, each in its own jar folder', () => {
    expect(kafkaVersion(undefined, { SPA_KAFKA_VERSION: '3.9.1' })).toBe('3.9.1');
    expect(kafkaVersion('3.9.1', { SPA_KAFKA_VERSION: '4.0.0' })).toBe('3.9.1');
    expect(jarsDir('3.9.1')).not.toBe(jarsDir('4.1.1'));
  });

  it('names the variable and the releases it takes when the value is not one', () => {
    for (const bad of ['2.8.1', '3.2.0', 'latest', '4.1', '5.0.0'])
      expect(() => kafkaVersion(undefined, { SPA_KAFKA_VERSION: bad })).toThrow(
        `SPA_KAFKA_VERSION=${bad}: expected an Apache Kafka release of the 3.x line (3.3.0 or later) or the 4.x line`,
      );
  });

  it('refuses to run storage a newer release formatted with an older one, saying what to do', async () => {
    const dataDir = join(dataRoot, 'upgraded');
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(join(dataDir, 'formatted-by'), '4.1.1\n');
    // Port 19949 (this suite's range) has no broker: the start gets as far as the check.
    await expect(
      startBroker({
        name: 'upgraded',
        dataRoot,
        port: 19949,
        controllerPort: 19948,
        kafkaVersion: '3.9.1',
        log: () => {},
      }),
    ).rejects.toThrow(
      `broker "upgraded" has storage written by Apache Kafka 4.1.1; 3.9.1 cannot run it (SPA_KAFKA_VERSION): ` +
        `choose another instance (KAFKA_INSTANCE) or delete ${dataDir}`,
    );
  });
});
