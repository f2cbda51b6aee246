/**
 * Two processes that find no broker at once (two `spa run`s of a check started side by side) both
 * start the local instance: the second waits on the first's start lock and gets its broker, where it
 * used to launch a second JVM on the same data folder and ports, which died during startup.
 */
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { brokerInstance } from '../../infra/kafka/broker-config.js';
import { brokerStatus } from '../../infra/kafka/broker.js';
import { stopTestBroker } from './harness.js';

const ports = { port: 19820, controllerPort: 19821 };
const name = 'two-starts';
const env: NodeJS.ProcessEnv = {
  ...process.env,
  KAFKA_PORT: String(ports.port),
  KAFKA_INSTANCE: `test-${name}`,
};
delete env['KAFKA_BROKERS'];

/** `kafka:start --no-topics` in a child process: its exit code and output. */
function kafkaStart(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'infra/kafka/cli.ts', 'start', '--no-topics'], {
    env,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

afterAll(() => stopTestBroker(name, ports), 60_000);

describe('two starts of one local broker at once', () => {
  it('both get the one broker; the second waits for the first', async () => {
    rmSync(brokerInstance({ name: `test-${name}`, ...ports }).dataDir, { recursive: true, force: true });
    const [a, b] = await Promise.all([kafkaStart(), kafkaStart()]);
    expect([a.code, b.code], a.stderr + b.stderr).toEqual([0, 0]);
    expect(a.stdout.trim()).toBe(`127.0.0.1:${ports.port}`);
    expect(b.stdout.trim()).toBe(`127.0.0.1:${ports.port}`);
    expect(a.stderr + b.stderr).toMatch(
      /broker "test-two-starts" is being started by pid \d+: waiting for it/,
    );
    const status = await brokerStatus({ name: `test-${name}`, ...ports });
    expect(status.answering).toBe(true);
  }, 240_000);
});
