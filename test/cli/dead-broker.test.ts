import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { closedPort } from '../kafka/harness.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

describe('a dead KAFKA_BROKERS', () => {
  it('is named within seconds and fails with one clear message after 8 s', async () => {
    const brokers = `127.0.0.1:${await closedPort()}`;
    const started = Date.now();
    const child = spawn(
      process.execPath,
      ['bin/spa.mjs', 'generate', '--env', 'sokoban', '--groups', '1', '--group-size', '1', '--out', 'kafka'],
      { cwd: repoRoot, env: { ...process.env, KAFKA_BROKERS: brokers } },
    );
    let stderr = '';
    let waitingAfter = Infinity;
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      if (waitingAfter === Infinity && stderr.includes(`waiting for KAFKA_BROKERS=${brokers}`))
        waitingAfter = (Date.now() - started) / 1000;
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    const seconds = (Date.now() - started) / 1000;
    expect(code).not.toBe(0);
    expect(waitingAfter).toBeLessThan(6);
    expect(stderr).toContain(`no Kafka broker answers at ${brokers} after 8 s`);
    expect(seconds).toBeLessThan(20); // 8 s budget + node/tsx start-up on a busy machine (was 23–28 s)
  }, 30_000);
});
