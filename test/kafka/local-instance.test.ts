/**
 * Issue 44 item 4: `spa doctor` and `npm run kafka:status` follow the broker settings every command
 * follows (KAFKA_BROKERS, KAFKA_PORT, KAFKA_INSTANCE), and a broker on the port that this checkout
 * did not start is named as someone else's: its data folder, and how to choose another port.
 * test/kafka/foreign-broker.slow.test.ts meets a real one.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkBroker } from '../../cli/commands/doctor.js';
import { foreignBroker, kafkaProcessOnPort, localInstanceFromEnv } from '../../infra/kafka/local-instance.js';
import { closedPort } from './harness.js';

const dir = mkdtempSync(join(tmpdir(), 'spa-other-checkout-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the local instance of the environment', () => {
  it('is KAFKA_INSTANCE on KAFKA_PORT, else "default" on 9092; a bad port names the variable', () => {
    expect(localInstanceFromEnv({})).toEqual({ name: 'default' });
    expect(localInstanceFromEnv({ KAFKA_PORT: '19300', KAFKA_INSTANCE: 'mine' })).toEqual({
      name: 'mine',
      port: 19300,
    });
    expect(() => localInstanceFromEnv({ KAFKA_PORT: '9o92' })).toThrow(/^KAFKA_PORT=9o92: expected a port/);
  });
});

describe('a broker on the port that this checkout did not start', () => {
  it('is found by its command line, with its data folder, and the message says how to choose another', async () => {
    const port = await closedPort();
    const properties = join(dir, 'server.properties');
    writeFileSync(
      properties,
      `process.roles=broker,controller\nlisteners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${port + 1}\n`,
    );
    // A process whose command line reads like a broker's: `… kafka.Kafka <server.properties>`.
    const fake = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)', 'kafka.Kafka', properties]);
    try {
      await new Promise((resolve) => fake.once('spawn', resolve));
      expect(kafkaProcessOnPort(port)).toEqual({ pid: fake.pid, dataDir: dir });
      expect(kafkaProcessOnPort(port + 2)).toBeUndefined();
      const { detail, fix } = foreignBroker(`127.0.0.1:${port}`, 'default', port);
      expect(detail).toBe(
        `127.0.0.1:${port} answers as a Kafka broker this checkout did not start (not instance "default"; pid ${fake.pid}, data folder ${dir})`,
      );
      expect(fix).toContain(`KAFKA_PORT=${port + 100} KAFKA_INSTANCE=<name>`);
      expect(fix).toContain(`KAFKA_BROKERS=127.0.0.1:${port}`);
    } finally {
      fake.kill();
    }
  });
});

describe('spa doctor and kafka:status follow the broker settings', () => {
  it("doctor asks KAFKA_PORT's broker, not 9092's", async () => {
    const port = await closedPort();
    const check = await checkBroker({ KAFKA_PORT: String(port), KAFKA_INSTANCE: 'doctor-test' }, false);
    expect(check).toMatchObject({ status: 'warn', detail: `nothing answers at 127.0.0.1:${port}` });
  });

  it('kafka:status with KAFKA_BROKERS reports that cluster (exit 3: it does not answer)', async () => {
    const port = await closedPort();
    const status = spawnSync(process.execPath, ['--import', 'tsx', 'infra/kafka/cli.ts', 'status'], {
      encoding: 'utf8',
      env: { ...process.env, KAFKA_BROKERS: `127.0.0.1:${port}` },
    });
    expect(status.status, status.stderr).toBe(3);
    expect(JSON.parse(status.stdout)).toEqual([
      { brokers: [`127.0.0.1:${port}`], external: true, answering: false },
    ]);
  }, 300_000);
});
