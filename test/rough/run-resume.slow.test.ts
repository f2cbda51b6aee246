/**
 * Issue 36 items 1 and 8 on a real broker: Ctrl-C prints a resume command that runs as typed, the
 * resumed run's summary counts both attempts' seconds, and its id, once finished, reprints the
 * summary (exit 0) instead of failing.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningBroker } from '../../infra/kafka/broker.js';
import { startTestBroker, stopTestBroker } from '../kafka/harness.js';
import { runSpa, spawnSpa, type SpaResult } from '../cli/spa-process.js';

const ports = { port: 19750, controllerPort: 19751 };
let broker: RunningBroker;
let runsDir: string;

beforeAll(async () => {
  broker = await startTestBroker('rough-run', ports);
  runsDir = await mkdtemp(join(tmpdir(), 'rough-run-'));
});

afterAll(async () => {
  await stopTestBroker('rough-run', ports);
  if (runsDir) await rm(runsDir, { recursive: true, force: true });
});

/** `spa <args>`, sent SIGINT once its stderr matches `pattern`. */
async function interrupted(args: readonly string[], pattern: RegExp): Promise<SpaResult> {
  const { child, ended } = spawnSpa(args, broker.brokers);
  let text = '';
  let sent = false;
  child.stderr!.on('data', (chunk: Buffer) => {
    text += chunk.toString();
    // once: a second Ctrl-C is Node's default, an exit without the resume hint
    if (!sent && pattern.test(text)) sent = child.kill('SIGINT');
  });
  return ended;
}

interface Seconds {
  attempts: number;
  seconds: Record<string, number>;
}

describe('spa run, interrupted and resumed', () => {
  it("prints a resume command that runs as typed; the summary counts both attempts' seconds; the finished id reprints it", async () => {
    const file = join(runsDir, 'small.yaml');
    await writeFile(
      file,
      ['generator: oracle', 'sft-groups: 8', 'sft-group-size: 1', 'sft-batches: 1', 'sft-epochs: 1']
        .concat([
          'ppo-groups-per-step: 2',
          'ppo-group-size: 2',
          'ppo-steps: 1',
          'eval-puzzles: 1',
          'eval-k: 1',
        ])
        .join('\n'),
    );
    const args = ['run', '--config-file', file, '--runs-dir', runsDir, '--run-id', 'resume'];
    const runDir = join(runsDir, 'resume');

    const first = await interrupted(args, /── sft\n/);
    expect(first.code, first.stderr).toBe(130);
    expect(first.stderr).toContain(
      `interrupted; resume with: npx spa run --config-file ${file} --runs-dir ${runsDir} --run-id resume\n`,
    );
    const before = JSON.parse(await readFile(join(runDir, 'stages', 'seconds.json'), 'utf8')) as Seconds;
    expect(before.attempts).toBe(1);
    expect(before.seconds['sft data']).toBeGreaterThan(0);
    expect(before.seconds).toHaveProperty('sft'); // the stage cut off, up to Ctrl-C

    const second = await runSpa(args, broker.brokers);
    expect(second.code, second.stderr.slice(-3000)).toBe(0);
    expect(second.stderr).toContain('── sft data: done in an earlier attempt, kept');
    const summary = JSON.parse(await readFile(join(runDir, 'summary.json'), 'utf8')) as Seconds;
    expect(summary.attempts).toBe(2);
    // the kept stage keeps its first attempt's seconds; the redone one adds both
    expect(summary.seconds['sft data']).toBe(before.seconds['sft data']);
    expect(summary.seconds['sft']).toBeGreaterThan(before.seconds['sft']!);
    expect(second.stdout).toMatch(/in all over 2 attempts\n/);

    const third = await runSpa(args, broker.brokers);
    expect(third.code, third.stderr.slice(-3000)).toBe(0);
    expect(third.stderr).toContain('run resume finished earlier; its summary follows');
    expect(third.stdout).toBe(second.stdout);
  }, 1_200_000);
});
