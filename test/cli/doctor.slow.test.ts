/** `spa doctor` as a user runs it: exit codes and fixes for a missing broker and a missing Java. */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import type { DoctorCheck } from '../../cli/commands/doctor.js';

function doctor(
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; checks: DoctorCheck[]; stderr: string }> {
  const child = spawn(process.execPath, ['bin/spa.mjs', 'doctor', '--json'], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) =>
    child.on('exit', (code) =>
      resolve({ code, stderr, checks: JSON.parse(stdout || '[]') as DoctorCheck[] }),
    ),
  );
}

const byName = (checks: DoctorCheck[], name: string): DoctorCheck => {
  const check = checks.find((c) => c.name === name);
  if (!check) throw new Error(`no "${name}" check in ${checks.map((c) => c.name).join(', ')}`);
  return check;
};

describe('spa doctor', () => {
  it('fails (exit 1) on an unreachable KAFKA_BROKERS and on a missing Java, saying what to do', async () => {
    const { KAFKA_BROKERS: _ignored, ...base } = process.env;
    const [remoteDown, noJava] = await Promise.all([
      doctor({ ...base, KAFKA_BROKERS: '127.0.0.1:1' }),
      // No PATH: java and mvn cannot be found (node is started by absolute path).
      doctor({ ...base, PATH: '/nonexistent' }),
    ]);
    expect(remoteDown.code, remoteDown.stderr).toBe(1);
    expect(byName(remoteDown.checks, 'broker')).toMatchObject({
      status: 'fail',
      detail: 'KAFKA_BROKERS=127.0.0.1:1 does not answer',
      fix: expect.stringContaining('KAFKA_BROKERS'),
    });
    expect(byName(remoteDown.checks, 'node').status).toBe('ok');

    expect(noJava.code, noJava.stderr).toBe(1);
    expect(byName(noJava.checks, 'java')).toMatchObject({
      status: 'fail',
      fix: expect.stringContaining('openjdk-17'),
    });
    for (const check of [...remoteDown.checks, ...noJava.checks])
      if (check.status !== 'ok') expect(check.fix, check.name).toBeTruthy();
  }, 180_000);
});
