/**
 * `spa generate --resumed-at <step>:<version>` (how `spa run` tells its generator processes where a
 * resumed PPO trainer stands): a malformed value or one without `--policy latest` is a usage error,
 * exit 2, named, before anything is played.
 */
import { describe, expect, it } from 'vitest';
import { runSpa } from '../cli/spa-process.js';

/** `spa generate` to a file with `extra` flags; no broker is involved. */
const generate = (extra: readonly string[]) =>
  runSpa(['generate', '--env', 'sokoban', '--out', '/tmp/spa-resumed-at.jsonl', ...extra], ['127.0.0.1:1']);

describe('spa generate --resumed-at', () => {
  it.each(['3', '0:1', '-1:2', '3:x', '3:2:1', ''])(
    'rejects "%s" with a one-line usage error',
    async (value) => {
      const result = await generate(['--policy', 'latest', '--resumed-at', value]);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toContain(`--resumed-at must be <step>:<version>`);
      expect(result.stderr).not.toMatch(/^\s+at .*:\d+:\d+\)?$/m);
    },
  );

  it('needs --policy latest', async () => {
    const result = await generate(['--policy', 'random', '--resumed-at', '3:2']);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('--resumed-at needs --policy latest, got --policy random');
  });
});
