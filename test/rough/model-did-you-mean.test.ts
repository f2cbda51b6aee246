/**
 * Issue 44 item 4: `--model` with a mistyped tiny model name suggests the nearest one, as a
 * newcomer typing `tiny_local` got only "no such folder".
 */
import { describe, expect, it } from 'vitest';
import { checkModel } from '../../cli/run/model-folder.js';
import { runSpa } from '../cli/spa-process.js';

describe('spa run --model <a mistyped tiny name>', () => {
  it('tiny_local: did you mean tiny-local?', () => {
    expect(() => checkModel('tiny_local')).toThrow(
      '--model tiny_local: no such tiny model or folder; did you mean tiny-local?',
    );
    expect(() => checkModel('Tiny-Locl')).toThrow(/did you mean tiny-local\?/);
  });

  it('is a usage error of the CLI: exit 2, one line', async () => {
    const result = await runSpa(['run', '--model', 'tiny_local', '--run-id', 'typo'], ['127.0.0.1:1']);
    expect(result.code).toBe(2);
    // spa run resolves --model against the working folder before checking it
    expect(result.stderr.trim()).toMatch(
      /^spa: --model \S*tiny_local: no such tiny model or folder; did you mean tiny-local\?$/,
    );
  }, 120_000);
});
