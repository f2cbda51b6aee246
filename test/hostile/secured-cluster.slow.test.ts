/**
 * Issue 33 item 2, a secured cluster: one broker with a SASL/SCRAM listener and a TLS listener
 * whose CA is made here (secured-pki.ts). The Python trainer trains SFT from a topic over TLS (its
 * dead letters going back over the same listener); over SCRAM it trains too when its librdkafka is
 * 2.6.1 or newer, and older ones (whose SCRAM Kafka 4 refuses, confluentinc/librdkafka#4895) end
 * with a message naming that bug (trained over SCRAM on Kafka 3.9: test/kafka/broker-versions). A
 * wrong password or a missing CA ends it with a message saying so, the TS transport talks TLS with
 * the CA and names the CA setting without it, and `spa doctor` says that authentication failed.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaConnectionConfig } from '../../infra/kafka/client/config.js';
import { waitForLeaders } from '../../infra/kafka/topics.js';
import { trainerPython } from '../../loop/trainer-process.js';
import type { DoctorCheck } from '../../cli/commands/doctor.js';
import { spaSchemas, type SftRow } from '../../schemas/index.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import type { ConsumedRecord } from '../../infra/kafka/client/transport.js';
import { GOLDEN_SAMPLES } from '../fixtures/avro/samples.js';
import { eventually, startTestBroker, stopTestBroker, testConnection } from '../kafka/harness.js';
import { makeTestPki, type TestPki } from './secured-pki.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ports = { port: 19720, controllerPort: 19721, saslPort: 19722 };
const SCRAM = '127.0.0.1:19722';
const TLS = '127.0.0.1:19723';
const alice = { username: 'alice', password: 'alice-secret', mechanism: 'SCRAM-SHA-256' as const };
const aliceEnv = {
  KAFKA_SASL_MECHANISM: 'scram-sha-256',
  KAFKA_SASL_USERNAME: 'alice',
  KAFKA_SASL_PASSWORD: 'alice-secret',
};
const rowsTopic = 'secured.sft';
const notAnSftRow = Buffer.from('not an SftRow: the trainer dead-letters it');

let pki: TestPki;
let python: string;
/** The release the broker runs (the pinned 4.x one unless SPA_KAFKA_VERSION names another). */
let kafkaVersion: string | undefined;
const scratch = mkdtempSync(join(tmpdir(), 'spa-secured-'));

/** The broker options: the TLS listener needs the PKI, made first. */
const brokerOptions = () => ({
  ...ports,
  scramUsers: [alice],
  ssl: { port: 19723, keystoreLocation: pki.brokerKeystoreLocation, truststoreLocation: pki.caLocation },
});

const scramConnection = (): KafkaConnectionConfig =>
  testConnection([SCRAM], {
    sasl: { mechanism: 'scram-sha-256', username: 'alice', password: 'alice-secret' },
  });

/** Four SftRows (two optimizer steps at batch 2) and, between them, one record that is not one. */
function sftRecords(): { key: Buffer; value: Buffer }[] {
  const sample = GOLDEN_SAMPLES['SftRow.v1'] as SftRow;
  const rows = [0, 1, 2, 3].map((turn) =>
    spaSchemas().encode('SftRow', { ...sample, turn, annotation: 'gt', mask_transitions: false }),
  );
  return [...rows.slice(0, 2), notAnSftRow, ...rows.slice(2)].map((value, i) => ({
    key: Buffer.from(`r${i}`),
    value,
  }));
}

beforeAll(async () => {
  python = trainerPython();
  pki = makeTestPki();
  ({ kafkaVersion } = await startTestBroker('hostile-secured', brokerOptions()));
  // Topics and rows go in over SCRAM: the TS side's SASL is the reference the trainer must match.
  const transport = kafkaTransport(scramConnection());
  try {
    const admin = await transport.admin();
    const topics = [rowsTopic, 'secured.dlq-scram', 'secured.dlq-tls'];
    await admin.createTopics(
      topics.map((name) => ({ name, partitions: 1, replicationFactor: 1, configs: {} })),
    );
    await waitForLeaders(admin, topics);
    await admin.close();
    const sink = await transport.sink();
    await sink.send(sftRecords().map((record) => ({ topic: rowsTopic, ...record })));
  } finally {
    await transport.close();
  }
}, 240_000);

afterAll(async () => {
  await stopTestBroker('hostile-secured', brokerOptions());
  pki.remove();
  rmSync(scratch, { recursive: true, force: true });
});

/** The environment without the runner's own Kafka settings, plus `kafka`. */
function envWith(kafka: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('KAFKA_')));
  return { ...base, PYTHONUNBUFFERED: '1', ...kafka };
}

/** Runs a program to its end; resolves with its exit code and output. */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd = root) {
  const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, stdout, stderr })),
  );
}

/** `python -m spa_trainer.sft` on the tiny model: one epoch of the topic at batch 2. */
function sft(out: string, dlq: string, kafka: Record<string, string>) {
  const args = ['-m', 'spa_trainer.sft', '--input', `kafka:${rowsTopic}`, '--out', join(scratch, out)];
  const small = ['--epochs', '1', '--batch-size', '2', '--val-fraction', '0', '--eval-rows', '0'];
  return run(
    python,
    [...args, ...small, '--skip-bad-rows', '--dlq', `kafka:${dlq}`],
    envWith(kafka),
    join(root, 'trainer'),
  );
}

/** How many records `topic` holds, asked over SCRAM. */
async function recordCount(topic: string): Promise<bigint> {
  const transport = kafkaTransport(scramConnection());
  try {
    const admin = await transport.admin();
    const [partition] = await admin.topicOffsets(topic);
    await admin.close();
    return (partition?.high ?? 0n) - (partition?.low ?? 0n);
  } finally {
    await transport.close();
  }
}

describe('the trainer on a secured cluster', () => {
  /** Trains one epoch over `kafka` and checks the result: finished, and the bad record in `dlq`. */
  async function expectTrained(out: string, dlq: string, kafka: Record<string, string>): Promise<void> {
    const result = await sft(out, dlq, kafka);
    expect(result.code, result.stderr.slice(-3000)).toBe(0);
    const metrics = JSON.parse(readFileSync(join(scratch, out, 'metrics.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    expect(metrics).toMatchObject({ finished: true, step: 2, rows_trained: 4 });
    expect(await recordCount(dlq)).toBe(1n);
  }

  it('trains SFT from a topic over TLS with a client certificate, dead-lettering the bad record there too', async () => {
    await expectTrained('sft-tls', 'secured.dlq-tls', {
      KAFKA_BROKERS: TLS,
      KAFKA_SSL_CA_LOCATION: pki.caLocation,
      KAFKA_SSL_CERTIFICATE_LOCATION: pki.clientCertificateLocation,
      KAFKA_SSL_KEY_LOCATION: pki.clientKeyLocation,
    });
  }, 240_000);

  it("over SASL/SCRAM: trains, unless an old librdkafka meets Kafka 4: then names librdkafka's SCRAM bug (exit 2)", async () => {
    const script = 'import confluent_kafka; print(confluent_kafka.libversion()[0])';
    const librdkafka = execFileSync(python, ['-c', script], { encoding: 'utf8' }).trim();
    const release = (version = '') => version.split(/[.-]/).map(Number);
    const [major = 0, minor = 0, patch = 0] = release(librdkafka);
    const scramFixed = major * 1e6 + minor * 1e3 + patch >= 2_006_001;
    const kafka4 = (release(kafkaVersion)[0] ?? 0) >= 4;
    if (scramFixed || !kafka4) {
      await expectTrained('sft-scram', 'secured.dlq-scram', { KAFKA_BROKERS: SCRAM, ...aliceEnv });
      return;
    }
    const result = await sft('sft-scram', 'secured.dlq-scram', { KAFKA_BROKERS: SCRAM, ...aliceEnv });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `[sft] error: Kafka refused the credentials of SASL user "alice" (SCRAM-SHA-256) on ${SCRAM}: wrong username or password — ` +
        `or, if the broker runs Kafka 4.x, librdkafka ${librdkafka} here predates the SCRAM fix of 2.6.1 (confluentinc/librdkafka#4895)`,
    );
    expect(result.stderr).not.toContain('cannot reach Kafka');
    expect(result.stderr).not.toContain('Traceback');
    expect(await recordCount('secured.dlq-scram')).toBe(0n);
  }, 240_000);

  it('ends with a message saying why on a wrong password or a CA it lacks, not "cannot reach"', async () => {
    const [wrongPassword, noCa] = await Promise.all([
      sft('sft-wrong-password', 'secured.dlq-scram', {
        KAFKA_BROKERS: SCRAM,
        ...aliceEnv,
        KAFKA_SASL_PASSWORD: 'guess',
      }),
      sft('sft-no-ca', 'secured.dlq-tls', { KAFKA_BROKERS: TLS, KAFKA_SSL: 'true' }),
    ]);
    expect(wrongPassword.code).toBe(2);
    expect(wrongPassword.stderr).toContain(
      '[sft] error: Kafka refused the credentials of SASL user "alice" (SCRAM-SHA-256) on 127.0.0.1:19722: wrong username or password',
    );
    expect(noCa.code).toBe(2);
    expect(noCa.stderr).toMatch(
      /\[sft\] error: the TLS certificate of Kafka at 127\.0\.0\.1:19723 could not be verified against a CA this machine trusts; set KAFKA_SSL_CA_LOCATION/,
    );
    for (const { stderr } of [wrongPassword, noCa]) {
      expect(stderr).not.toContain('cannot reach Kafka');
      expect(stderr).not.toContain('Traceback');
    }
  }, 120_000);
});

describe('the TS transport over TLS', () => {
  it('produces and consumes with the CA made here', async () => {
    const topic = 'secured.tls';
    const transport = kafkaTransport(testConnection([TLS], { sslFiles: { caLocation: pki.caLocation } }));
    try {
      const admin = await transport.admin();
      await admin.createTopics([{ name: topic, partitions: 1, replicationFactor: 1, configs: {} }]);
      await waitForLeaders(admin, [topic]);
      await admin.close();
      const sink = await transport.sink();
      await sink.send([{ topic, key: Buffer.from('k'), value: Buffer.from('over TLS') }]);
      const source = await transport.source({
        groupId: 'secured',
        topics: [topic],
        start: { kind: 'earliest' },
      });
      const records: ConsumedRecord[] = [];
      await source.run(async (batch) => void records.push(...batch.records));
      await eventually(() => records.length >= 1, 60_000, 'the record over TLS');
      expect(records.map((r) => r.value?.toString())).toEqual(['over TLS']);
    } finally {
      await transport.close();
    }
  }, 120_000);

  it('without the CA, fails naming KAFKA_SSL_CA_LOCATION', async () => {
    const config = testConnection([TLS], {
      ssl: true,
      retry: { retries: 1, initialRetryTimeMs: 100, maxRetryTimeMs: 100 },
    });
    const transport = kafkaTransport(config);
    try {
      await expect(transport.sink()).rejects.toThrow(
        /^the TLS certificate of Kafka at 127\.0\.0\.1:19723 is not signed by a CA Node trusts; set KAFKA_SSL_CA_LOCATION to the PEM file of the CA that signed it \(UNABLE_TO_VERIFY_LEAF_SIGNATURE/,
      );
    } finally {
      await transport.close();
    }
  }, 60_000);
});

describe('spa doctor on a secured cluster', () => {
  it('says authentication failed on a wrong password (exit 1), and OK with the right one', async () => {
    const doctor = (password: string) =>
      run(
        process.execPath,
        ['bin/spa.mjs', 'doctor', '--json'],
        envWith({ KAFKA_BROKERS: SCRAM, ...aliceEnv, KAFKA_SASL_PASSWORD: password }),
      );
    const [wrong, right] = await Promise.all([doctor('guess'), doctor('alice-secret')]);
    const broker = (stdout: string) => (JSON.parse(stdout) as DoctorCheck[]).find((c) => c.name === 'broker');
    expect(wrong.code).toBe(1);
    expect(broker(wrong.stdout)).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(
        /^authentication failed: Kafka refused the credentials of SASL user "alice" \(SCRAM-SHA-256\) on 127\.0\.0\.1:19722/,
      ),
      fix: expect.stringContaining('KAFKA_SASL_PASSWORD'),
    });
    expect(broker(right.stdout)).toMatchObject({ status: 'ok', detail: 'answering at 127.0.0.1:19722' });
  }, 180_000);
});
