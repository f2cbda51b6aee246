/**
 * Issue 36 item 1: the commands `spa run` prints for a user to type (the resume hint after Ctrl-C,
 * the `spa eval` that reproduces an evaluation) run as typed from the repo, where no `spa` is on
 * the PATH: they start with `npx spa`.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { resumeCommand, typedCommand } from '../../loop/typed-command.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

describe("spa run's resume hint", () => {
  it('is the same command through npx with the run id in place of any given', () => {
    // `npm start` runs `node bin/spa.mjs run`: the same argv as `npx spa run`
    expect(resumeCommand(['run'], 'run-20261127061500')).toBe('npx spa run --run-id run-20261127061500');
    expect(resumeCommand(['run', '--run-id', 'old', '--sft-epochs', '2'], 'old')).toBe(
      'npx spa run --sft-epochs 2 --run-id old',
    );
    expect(resumeCommand(['run', '--run-id=old', '--full'], 'old')).toBe('npx spa run --full --run-id old');
  });

  it('quotes what a shell would split', () => {
    expect(resumeCommand(['run', '--config-file', 'my run.yaml'], 'r1')).toBe(
      "npx spa run --config-file 'my run.yaml' --run-id r1",
    );
  });

  it('runs as typed in the repo with no spa on the PATH', () => {
    const out = execFileSync('sh', ['-c', typedCommand(['topics', '--help'])], {
      cwd: repoRoot,
      env: {
        ...process.env,
        PATH: process.env['PATH']!.split(':')
          .filter((d) => !d.includes('node_modules'))
          .join(':'),
      },
      encoding: 'utf8',
    });
    expect(out).toContain('Usage: spa topics');
  });
});
