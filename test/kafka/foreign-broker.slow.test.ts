/**
 * Issue 44 item 4: a start (`npm run kafka:start`, as `npm start` and every command start the
 * local broker) and `spa doctor` that find, on their port, a broker this checkout did not start
 * (another checkout's: here another instance's data folder) say whose it is and how to choose
 * another port, instead of taking it for their own.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { brokerInstance } from '../../infra/kafka/broker-config.js';
import { startTestBroker, stopTestBroker } from './harness.js';

const ports = { port: 19790, controllerPort: 19791 };
const theirs = brokerInstance({ name: 'test-foreign', ...ports });
/** This checkout's instance on the same port: another name, so not the running one. */
const env: NodeJS.ProcessEnv = {
  ...process.env,
  KAFKA_PORT: String(ports.port),
  KAFKA_INSTANCE: 'test-mine',
};
delete env['KAFKA_BROKERS'];

beforeAll(async () => {
  await startTestBroker('foreign', ports);
}, 120_000);
afterAll(() => stopTestBroker('foreign', ports));

describe('a broker on the port that this checkout did not start', () => {
  it('kafka:start stops, naming its data folder and KAFKA_PORT / KAFKA_INSTANCE', () => {
    const start = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'infra/kafka/cli.ts', 'start', '--no-topics'],
      { encoding: 'utf8', env },
    );
    expect(start.status).toBe(1);
    expect(start.stderr).toContain(
      `127.0.0.1:${ports.port} answers as a Kafka broker this checkout did not start`,
    );
    expect(start.stderr).toContain(`data folder ${theirs.dataDir}`);
    expect(start.stderr).toContain(`KAFKA_PORT=${ports.port + 100} KAFKA_INSTANCE=<name>`);
  }, 120_000);

  it('spa doctor warns it is not this checkout’s, with whose it is', () => {
    const doctor = spawnSync(process.execPath, ['bin/spa.mjs', 'doctor', '--json'], {
      encoding: 'utf8',
      env,
    });
    const checks = JSON.parse(doctor.stdout) as {
      name: string;
      status: string;
      detail: string;
      fix?: string;
    }[];
    const broker = checks.find((c) => c.name === 'broker');
    expect(broker?.status).toBe('warn');
    expect(broker?.detail).toContain(`data folder ${theirs.dataDir}`);
    expect(broker?.fix).toContain('KAFKA_INSTANCE=<name>');
  }, 180_000);

  it('kafka:status lists nothing of this checkout and says whose the broker is', () => {
    const status = spawnSync(process.execPath, ['--import', 'tsx', 'infra/kafka/cli.ts', 'status'], {
      encoding: 'utf8',
      env,
    });
    expect(status.status).toBe(3);
    expect(JSON.parse(status.stdout)).toEqual([]);
    expect(status.stderr).toContain(`data folder ${theirs.dataDir}`);
  }, 60_000);
});
