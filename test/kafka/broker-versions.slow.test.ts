/**
 * The broker releases this project is tested on: `npm run kafka:start` runs the pinned Kafka 4
 * release and says so, and a Kafka 3.9 broker (users with older clusters) still takes kafkajs'
 * produce, consume and transactions and the trainer's Python client (confluent-kafka on
 * librdkafka), over SASL/SCRAM too: Kafka 4 refuses the SCRAM of librdkafka before 2.6.1
 * (test/hostile/secured-cluster), 3.9 takes it. Every other slow suite runs on the pinned release.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopBroker, type RunningBroker } from '../../infra/kafka/broker.js';
import { brokerInstance } from '../../infra/kafka/broker-config.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import type { ConsumedRecord, KafkaTransport, OutgoingRecord } from '../../infra/kafka/client/transport.js';
import { jarsDir, pinnedKafkaVersion } from '../../infra/kafka/jars.js';
import { waitForLeaders } from '../../infra/kafka/topics.js';
import { spaSchemas, type SftRow } from '../../schemas/index.js';
import { GOLDEN_SAMPLES } from '../fixtures/avro/samples.js';
import { eventually, startTestBroker, stopTestBroker, testConnection } from './harness.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const python = join(root, 'trainer', '.venv', 'bin', 'python');
/** This suite's ports: 19900-19949. */
const cliPorts = { name: 'test-kafka-cli', port: 19910, controllerPort: 19911 };
const alice = { username: 'alice', password: 'alice-secret', mechanism: 'SCRAM-SHA-256' as const };
const oldPorts = {
  port: 19900,
  controllerPort: 19901,
  saslPort: 19902,
  scramUsers: [alice],
  kafkaVersion: '3.9.1',
};

/** The release a running JVM was really launched with: its classpath is that release's jar folder. */
function classpathRelease(pid: number): string | undefined {
  const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  const classpath = cmdline[cmdline.indexOf('-cp') + 1] ?? '';
  return /\/dist\/libs\/([^/]+)\/\*$/.exec(classpath)?.[1];
}

describe('npm run kafka:start', () => {
  // The pinned release on this suite's own instance, whatever the caller's environment names.
  const { SPA_KAFKA_VERSION: _version, KAFKA_BROKERS: _brokers, ...inherited } = process.env;
  const env = { ...inherited, KAFKA_PORT: String(cliPorts.port), KAFKA_INSTANCE: cliPorts.name };
  const kafkaCli = (command: string): SpawnSyncReturns<string> =>
    spawnSync('npx', ['tsx', 'infra/kafka/cli.ts', command], { cwd: root, env, encoding: 'utf8' });

  beforeAll(async () => {
    await stopBroker(cliPorts);
    rmSync(brokerInstance(cliPorts).dataDir, { recursive: true, force: true });
  });

  afterAll(async () => {
    await stopBroker(cliPorts);
  });

  it('runs the pinned Kafka 4 release and prints it; status names it too', () => {
    const version = pinnedKafkaVersion();
    expect(version).toMatch(/^4\./);
    const start = kafkaCli('start');
    expect(start.status, start.stderr).toBe(0);
    expect(start.stderr).toContain(`[kafka] Apache Kafka ${version} on 127.0.0.1:${cliPorts.port}`);
    expect(start.stderr).toMatch(/topics: created spa\.trajectories/);
    const status = kafkaCli('status');
    const [node] = JSON.parse(status.stdout) as [{ pid: number; kafkaVersion: string }];
    expect(node.kafkaVersion).toBe(version);
    expect(classpathRelease(node.pid)).toBe(version);
  });
});

describe('a Kafka 3.9 broker (older clusters)', () => {
  let broker: RunningBroker;
  let transport: KafkaTransport;
  const topic = 'v39';

  const record = (id: number): OutgoingRecord => ({
    topic,
    key: Buffer.from(`key-${id}`),
    value: Buffer.from(String(id)),
  });

  beforeAll(async () => {
    broker = await startTestBroker('kafka-3.9', oldPorts);
    transport = kafkaTransport(testConnection(broker.brokers));
    const admin = await transport.admin();
    await admin.createTopics([{ name: topic, partitions: 2, replicationFactor: 1, configs: {} }]);
    await waitForLeaders(admin, [topic]);
    await admin.close();
  });

  afterAll(async () => {
    await transport?.close();
    await stopTestBroker('kafka-3.9', oldPorts);
  });

  it('is really 3.9.1, from its own jar folder', () => {
    expect(broker.kafkaVersion).toBe('3.9.1');
    expect(classpathRelease(broker.pid ?? 0)).toBe('3.9.1');
    expect(jarsDir('3.9.1')).toMatch(/dist\/libs\/3\.9\.1$/);
  });

  it('kafkajs: a committed transaction and a plain send are read, an aborted transaction never', async () => {
    const sink = await transport.sink({ transactionalId: 'spa-test-v39' });
    await sink.transaction(async (tx) => void (await tx.send([record(1), record(2)])));
    await expect(
      sink.transaction(async (tx) => {
        await tx.send([record(666)]);
        throw new Error('abort on purpose');
      }),
    ).rejects.toThrow('abort on purpose');
    await sink.send([record(3)]);
    await sink.close();

    const source = await transport.source({ groupId: 'v39-g', topics: [topic], start: { kind: 'earliest' } });
    const records: ConsumedRecord[] = [];
    await source.run(async (batch) => void records.push(...batch.records));
    await eventually(() => records.length >= 3, 60_000, '3 records from v39');
    await source.close();
    expect(records.map((r) => Number(r.value?.toString())).sort()).toEqual([1, 2, 3]);
  });

  it("the trainer's client reads the same records read_committed, without the aborted one", () => {
    // confluent-kafka as the trainer configures its reader (spa_trainer/kafka/client.py).
    const script = `
import json, sys
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "v39-py", "isolation.level": "read_committed",
              "enable.auto.commit": False})
c.assign([TopicPartition("${topic}", p, 0) for p in (0, 1)])
seen = []
for _ in range(60):
    m = c.poll(0.5)
    if m is not None and not m.error():
        seen.append(int(m.value()))
    if len(seen) >= 3:
        break
c.close()
print(json.dumps(sorted(seen)))
`;
    const result = spawnSync(python, ['-c', script, broker.brokers.join(',')], { encoding: 'utf8' });
    expect(result.status, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout.trim())).toEqual([1, 2, 3]);
  });

  it("the trainer's Kafka tests pass against it with nothing skipped", () => {
    const result = spawnSync(
      python,
      [
        '-m',
        'pytest',
        '-o',
        'addopts=',
        '-rs',
        '-p',
        'no:cacheprovider',
        'tests/test_kafka.py',
        'tests/test_ppo_service_kafka.py',
      ],
      {
        cwd: join(root, 'trainer'),
        env: { ...process.env, KAFKA_BROKERS: broker.brokers.join(',') },
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    const output = `${result.stdout}\n${result.stderr}`;
    expect(result.status, output.slice(-4000)).toBe(0);
    expect(output).toMatch(/\d+ passed/);
    expect(output).not.toMatch(/\d+ skipped/);
  });

  it('the trainer trains SFT from a topic over SASL/SCRAM (librdkafka < 2.6.1 too)', async () => {
    const sftTopic = 'v39.sft';
    const admin = await transport.admin();
    await admin.createTopics([{ name: sftTopic, partitions: 1, replicationFactor: 1, configs: {} }]);
    await waitForLeaders(admin, [sftTopic]);
    await admin.close();
    const sample = GOLDEN_SAMPLES['SftRow.v1'] as SftRow;
    const sink = await transport.sink();
    await sink.send(
      [0, 1, 2, 3].map((turn) => ({
        topic: sftTopic,
        key: Buffer.from(`r${turn}`),
        value: spaSchemas().encode('SftRow', { ...sample, turn, annotation: 'gt', mask_transitions: false }),
      })),
    );
    await sink.close();

    const scratch = mkdtempSync(join(tmpdir(), 'spa-v39-sft-'));
    const out = join(scratch, 'sft');
    try {
      const kafkaFree = Object.entries(process.env).filter(([name]) => !name.startsWith('KAFKA_'));
      const result = spawnSync(
        python,
        [
          ...['-m', 'spa_trainer.sft', '--input', `kafka:${sftTopic}`, '--out', out],
          ...['--epochs', '1', '--batch-size', '2', '--val-fraction', '0', '--eval-rows', '0'],
        ],
        {
          cwd: join(root, 'trainer'),
          encoding: 'utf8',
          env: {
            ...Object.fromEntries(kafkaFree),
            KAFKA_BROKERS: broker.saslBrokers.join(','),
            KAFKA_SASL_MECHANISM: 'scram-sha-256',
            KAFKA_SASL_USERNAME: alice.username,
            KAFKA_SASL_PASSWORD: alice.password,
          },
        },
      );
      expect(result.status, result.stderr.slice(-3000)).toBe(0);
      const metrics = JSON.parse(readFileSync(join(out, 'metrics.json'), 'utf8')) as Record<string, unknown>;
      expect(metrics).toMatchObject({ finished: true, step: 2, rows_trained: 4 });
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }, 240_000);
});
