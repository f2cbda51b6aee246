import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningBroker } from '../../infra/kafka/broker.js';
import { startTestBroker, stopTestBroker } from '../kafka/harness.js';

/**
 * The Python trainer's pytest suite, run by `npm test` (design: trainer tests live in
 * trainer/tests and run from the same command) against a real broker of its own, so its
 * Kafka tests run instead of skipping.
 */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const broker = { port: 19500, controllerPort: 19501 };
let running: RunningBroker;

beforeAll(async () => {
  const setup = spawnSync('node', ['scripts/setup-python.mjs'], { cwd: root, stdio: 'inherit' });
  expect(setup.status, 'scripts/setup-python.mjs failed').toBe(0);
  running = await startTestBroker('pytest', broker);
});

afterAll(async () => {
  await stopTestBroker('pytest', broker);
});

describe('trainer (pytest)', () => {
  it('passes with nothing skipped', () => {
    const result = spawnSync(
      join(root, 'trainer/.venv/bin/python'),
      ['-m', 'pytest', '-o', 'addopts=', '-rs', '-p', 'no:cacheprovider'],
      {
        cwd: join(root, 'trainer'),
        env: { ...process.env, KAFKA_BROKERS: running.brokers.join(',') },
        encoding: 'utf8',
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    const output = `${result.stdout}\n${result.stderr}`;
    if (result.status !== 0) console.error(output.slice(-8000));
    expect(result.status).toBe(0);
    expect(output).toMatch(/\d+ passed/);
    expect(output).not.toMatch(/\d+ skipped/);
  });
});
