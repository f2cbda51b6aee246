/**
 * Issue 36 item 7: `spa run` checks its inputs before anything starts (no broker, no run folder),
 * prints a bad one's error once, and a start that fails leaves no run folder behind.
 */
import { mkdirSync, mkdtempSync as makeTemp, rmSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkModel } from '../../cli/run/model-folder.js';
import { runSpa } from '../cli/spa-process.js';
import { closedPort } from '../kafka/harness.js';

/** Temporary folders of this file, removed at the end. */
const temps: string[] = [];
const mkdtempSync = (prefix: string) => {
  temps.push(makeTemp(prefix));
  return temps.at(-1)!;
};
afterAll(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

describe('spa run --model', () => {
  it('a missing folder: exit 2 at once, one error line naming the flag, no broker, no run folder', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'spa-run-inputs-'));
    const started = Date.now();
    const args = ['run', '--model', '/tmp/no-such-model', '--runs-dir', runsDir, '--run-id', 'bad-model'];
    const result = await runSpa(args, [`127.0.0.1:${await closedPort()}`]);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual([
      expect.stringMatching(
        /^spa: --model \/tmp\/no-such-model: no such folder; expected tiny \| tiny-cells/,
      ),
    ]);
    expect(readdirSync(runsDir)).toEqual([]);
    // no broker was waited for (a dead one is given up on after 8 s)
    expect(Date.now() - started).toBeLessThan(8_000);
  });

  it('takes a tiny model by name, a Hugging Face folder, a trainer checkpoint or run folder', () => {
    const root = mkdtempSync(join(tmpdir(), 'spa-models-'));
    const folder = (name: string, file?: string) => {
      mkdirSync(join(root, name, file ? join(file, '..') : ''), { recursive: true });
      if (file) writeFileSync(join(root, name, file), '{}');
      return join(root, name);
    };
    expect(() => checkModel('tiny-cells')).not.toThrow();
    expect(() => checkModel(folder('hf', 'config.json'))).not.toThrow();
    expect(() => checkModel(folder('step', 'model/config.json'))).not.toThrow();
    expect(() => checkModel(folder('out', 'checkpoints/latest'))).not.toThrow();
    expect(() => checkModel(folder('empty'))).toThrow(/--model \S+empty: no config\.json in the folder/);
    expect(() => checkModel(join(root, 'hf', 'config.json'))).toThrow(/: not a folder;/);
    expect(() => checkModel('tiny-cell')).toThrow(/no such tiny model or folder; did you mean tiny-cells\?/);
    expect(() => checkModel('huge')).toThrow(/no such folder; expected tiny \| tiny-cells \| tiny-local/);
  });
});

describe('spa run --run-id', () => {
  it('refuses an id that cannot name Kafka topics, or `last`, before anything starts', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'spa-run-inputs-'));
    for (const [id, error] of [
      ['my run', /--run-id <id>' argument 'my run' is invalid\. a run id is 1\.\.200 letters, digits/],
      ['last', /"last" means the newest run to spa tap\/replay\/topics --run; choose another id/],
    ] as const) {
      const result = await runSpa(['run', '--runs-dir', runsDir, '--run-id', id], ['127.0.0.1:9']);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(error);
    }
    expect(readdirSync(runsDir)).toEqual([]);
  });
});

describe('spa run on a dead broker', () => {
  it('fails with exit 1 and leaves no run folder behind', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'spa-run-dead-'));
    const result = await runSpa(
      ['run', '--runs-dir', runsDir, '--run-id', 'dead'],
      [`127.0.0.1:${await closedPort()}`],
    );
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr).toMatch(
      /no Kafka broker answers at 127\.0\.0\.1:\d+ after 8 s.*`npx spa doctor` checks/,
    );
    expect(readdirSync(runsDir)).toEqual([]);
    // 12 s alone; 58 s and once over 60 s inside a fresh clone's full `npm test` (cause not found
    // yet: the same command run by hand there takes 13 s), so the limit leaves room.
  }, 240_000);
});
