/**
 * Issue 42 item 2: one process at a time holds a run id. A second `spa run --run-id X` while X's
 * holder lives exits 2 with one line naming the holder's pid; a holder killed with SIGKILL keeps
 * nothing (its stale lock is replaced); a reused pid is not taken for the holder. No broker is
 * needed: a start holds its run's lock while it waits for the (dead) broker.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { holdRunLock, RunLockedError } from '../../loop/run-lock.js';
import { runSpa, spawnSpa } from '../cli/spa-process.js';
import { closedPort, eventually } from '../kafka/harness.js';

const temps: string[] = [];
const temp = () => {
  temps.push(mkdtempSync(join(tmpdir(), 'spa-run-lock-')));
  return temps.at(-1)!;
};
afterAll(() => temps.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

describe('spa run --run-id held by a live process', () => {
  it('refuses a second start with one line naming the holder; a SIGKILLed holder keeps nothing', async () => {
    const runsDir = temp();
    const brokers = [`127.0.0.1:${await closedPort()}`];
    const args = ['run', '--runs-dir', runsDir, '--run-id', 'held'];
    // the holder waits for the broker long enough for the second start
    const holder = spawnSpa(args, brokers, { SPA_KAFKA_CONNECT_TIMEOUT_S: '120' });
    try {
      const lock = join(runsDir, 'held', 'run.lock');
      await eventually(() => existsSync(lock) || holder.child.exitCode !== null, 60_000, 'the run lock');
      expect(existsSync(lock), 'the first start took no lock').toBe(true);

      const second = await runSpa(args, brokers, { SPA_KAFKA_CONNECT_TIMEOUT_S: '2' });
      expect(second.code).toBe(2);
      expect(second.stderr.trim().split('\n')).toEqual([
        expect.stringMatching(
          new RegExp(
            `^spa: run "held" is running in another process: pid ${holder.child.pid} \\(since .*\\) holds ${lock}; `,
          ),
        ),
      ]);
      expect(JSON.parse(readFileSync(lock, 'utf8'))).toMatchObject({ pid: holder.child.pid });

      holder.child.kill('SIGKILL');
      await holder.ended;
      expect(existsSync(lock)).toBe(true); // SIGKILL runs no handler: the lock is stale

      // the stale lock is replaced: the third start gets as far as the dead broker (exit 1, not 2)
      const third = await runSpa(args, brokers, { SPA_KAFKA_CONNECT_TIMEOUT_S: '2' });
      expect(third.code, third.stderr).toBe(1);
      expect(third.stderr).toMatch(/no Kafka broker answers at/);
      expect(third.stderr).not.toMatch(/running in another process/);
      expect(readdirSync(runsDir)).toEqual([]); // its release removed the lock and the empty run folder
    } finally {
      holder.child.kill('SIGKILL');
    }
  }, 240_000);
});

describe('holdRunLock', () => {
  it('refuses a lock held by a live process, and releases its own with the empty run folder', () => {
    const runDir = join(temp(), 'r');
    const release = holdRunLock(runDir, 'r');
    expect(() => holdRunLock(runDir, 'r')).toThrow(RunLockedError);
    expect(() => holdRunLock(runDir, 'r')).toThrow(`pid ${process.pid}`);
    release();
    expect(existsSync(runDir)).toBe(false);
  });

  it('replaces a lock whose pid now names another process (the holder died, its pid was reused)', () => {
    const runDir = join(temp(), 'r');
    mkdirSync(runDir);
    const stale = { pid: process.pid, processStart: '1', since: '2026-01-01T00:00:00.000Z' };
    const lock = join(runDir, 'run.lock');
    writeFileSync(join(runDir, 'keep'), ''); // the folder is not empty: it stays
    writeFileSync(lock, JSON.stringify(stale));
    const release = holdRunLock(runDir, 'r');
    expect(JSON.parse(readFileSync(lock, 'utf8'))).toMatchObject({ pid: process.pid });
    expect(JSON.parse(readFileSync(lock, 'utf8')).processStart).not.toBe('1');
    release();
    expect(existsSync(lock)).toBe(false);
    expect(readdirSync(runDir)).toEqual(['keep']);
  });
});
