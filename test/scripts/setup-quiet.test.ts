/**
 * Issue 44 item 3: the set-up prints one line per step (npm, venv, jars) with its time; the tools'
 * own output (hundreds of pip lines on a fresh clone) goes to a log file, whose last lines and
 * path are printed when a step fails. So the first `npm start` shows the project's own lines.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(join(tmpdir(), 'spa-setup-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A step like pip's on a machine with unreachable indexes: 300 lines of chatter, then a failure. */
const failingStep = `
import { logged, step } from './scripts/setup-step.mjs';
step('venv', () => {
  logged('sh', ['-c', 'for i in $(seq 300); do echo "WARNING: Retrying pip line $i"; done; echo "ERROR: No matching distribution found for torch" >&2; exit 3']);
  return 'never';
});
`;

describe('the set-up', () => {
  it('a failing step: one line, then the log’s last lines and its path; the whole output in the log', () => {
    const log = join(dir, 'setup.log');
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', failingStep], {
      encoding: 'utf8',
      env: { ...process.env, SPA_SETUP_LOG: log },
    });
    expect(run.status).toBe(1);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines.length).toBeLessThanOrEqual(30);
    expect(lines[0]).toMatch(/^\[setup\] venv: FAILED after \d+\.\d s: sh -c .* exited with 3$/);
    expect(run.stderr).toContain('ERROR: No matching distribution found for torch');
    expect(lines.at(-1)).toBe(`[setup] full output: ${log}`);
    expect(run.stdout).toBe('');
    const logged = readFileSync(log, 'utf8');
    expect(logged).toContain('WARNING: Retrying pip line 1\n');
    expect(logged).toContain('WARNING: Retrying pip line 300\n');
  });

  it('a real run over a provisioned checkout: one line per step, with its time, nothing else', () => {
    const run = spawnSync(process.execPath, ['scripts/setup.mjs', 'python', 'kafka'], { encoding: 'utf8' });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toBe('');
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines.map((line) => line.split(':')[0])).toEqual(['[setup] npm', '[setup] venv', '[setup] jars']);
    for (const line of lines) expect(line).toMatch(/\((\d+\.\d s|\d+ min \d+ s)\)$/);
    expect(existsSync(join('trainer', '.venv', 'bin', 'python'))).toBe(true);
  }, 300_000);
});
