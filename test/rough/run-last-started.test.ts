/**
 * Issue 44 item 4: `--run last` is the newest run that has started its loop, not a newer run that
 * stopped before its first stage (its topics made, its folder there, no `stages/` in it).
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pickRun } from '../../cli/run-topics.js';

const runsDir = mkdtempSync(join(tmpdir(), 'spa-runs-last-'));
afterAll(() => rmSync(runsDir, { recursive: true, force: true }));

const roles = ['trajectories', 'sft', 'rollouts', 'dlq', 'policy'];
const topicsOf = (id: string) => roles.map((role) => `spa.${id}.${role}`);

function runFolder(id: string, secondsAgo: number, started: boolean): void {
  mkdirSync(join(runsDir, id, ...(started ? ['stages'] : [])), { recursive: true });
  const at = new Date(Date.now() - secondsAgo * 1000);
  utimesSync(join(runsDir, id), at, at);
}

describe('--run last', () => {
  it('skips a newer run aborted before its first stage for the one running', () => {
    const running = 'run-20261127050000';
    const aborted = 'run-20261127060000';
    runFolder(running, 600, true);
    runFolder(aborted, 10, false);
    const broker = [...topicsOf(running), ...topicsOf(aborted)];
    expect(pickRun(broker, 'last', runsDir).runId).toBe(running);
  });

  it('still takes the newest id when no run has started its loop here', () => {
    const broker = [...topicsOf('run-20261127010000'), ...topicsOf('run-20261127020000')];
    expect(pickRun(broker, 'last', join(runsDir, 'elsewhere')).runId).toBe('run-20261127020000');
  });
});
