import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

/** Runs `node bin/spa.mjs parse` with `lines` on stdin; returns its stdout lines, parsed. */
function spaParse(lines: string[]): unknown[] {
  const run = spawnSync(process.execPath, ['bin/spa.mjs', 'parse'], {
    cwd: repoRoot,
    input: `${lines.join('\n')}\n`,
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(run.status, run.stderr).toBe(0);
  return run.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as unknown);
}

describe('spa parse (end to end)', () => {
  it('answers one JSON line per input line and keeps going after bad lines', { timeout: 60_000 }, () => {
    const out = spaParse([
      JSON.stringify({
        mode: 'wm',
        env: 'sokoban',
        continuation:
          ' <observation>x</observation> plan <prediction>y</prediction></think><answer>Right || Up || Left</answer>',
      }),
      'not json',
      JSON.stringify({
        mode: 'base',
        env: 'frozenlake',
        continuation: 'I go.</think><answer>up || Jump</answer>',
      }),
      JSON.stringify({ mode: 'chat', env: 'sokoban', continuation: '' }),
      JSON.stringify({
        mode: 'wm',
        env: 'sudoku',
        continuation: 'Fill.</think><answer>2,1,1 || 2,3,2</answer>',
        spa_fallback_bug: true,
      }),
      '',
      JSON.stringify({
        mode: 'wm',
        env: 'sudoku',
        continuation: 'Fill.</think><answer>2,1,1 || 2,3,2</answer>',
      }),
    ]);
    expect(out).toHaveLength(7);
    expect(out[0]).toEqual({
      matched: 'strict',
      ok: true,
      actions: ['Right', 'Up', 'Left'],
      valid_ids: [4, 1, 3],
      penalty: false,
      canonical:
        '<think> <observation>x</observation> plan <prediction>y</prediction></think><answer>Right || Up || Left</answer>',
      reason: null,
    });
    expect(out[1]).toEqual({ error: expect.stringMatching(/not JSON/) });
    expect(out[2]).toMatchObject({
      matched: 'strict',
      ok: false,
      valid_ids: [4],
      penalty: true,
      reason: 'unknown-action',
    });
    expect(out[3]).toEqual({ error: 'mode "chat" is not one of wm, base' });
    expect(out[4]).toMatchObject({ matched: 'fallback', ok: false, penalty: false, reason: 'answer-only' });
    expect((out[4] as { valid_ids: string[] }).valid_ids).toHaveLength(14);
    expect(out[5]).toEqual({ error: expect.stringMatching(/empty line/) });
    expect(out[6]).toMatchObject({
      matched: 'fallback',
      actions: [],
      valid_ids: [],
      penalty: true,
      canonical: null,
    });
  });
});
