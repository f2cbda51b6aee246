import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readPpoProgress, readSftMetrics } from '../../loop/trainer-files.js';

describe('files the trainers leave in their --out folder', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'trainer-files-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const write = (name: string, text: string) => {
    const out = join(dir, 'out');
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, name), text);
    return out;
  };

  it('reads the SFT metrics, with null for a metric without data', () => {
    const out = write(
      'metrics.json',
      JSON.stringify({
        finished: true,
        step: 12,
        val_loss: null,
        exported_version: 1,
        artifact: '/p/v000001',
      }),
    );
    expect(readSftMetrics(out)).toEqual({
      finished: true,
      step: 12,
      val_loss: null,
      exported_version: 1,
      artifact: '/p/v000001',
    });
  });

  it('names the file when it is not valid JSON (a bare NaN, as json.dumps writes by default)', () => {
    const out = write('metrics.json', '{"finished": true, "step": 3, "val_loss": NaN}');
    expect(() => readSftMetrics(out)).toThrow(`${join(out, 'metrics.json')}: not valid JSON`);
  });

  it('refuses the metrics of an interrupted SFT run and a missing file', () => {
    const out = write('metrics.json', JSON.stringify({ finished: false, step: 2 }));
    expect(() => readSftMetrics(out)).toThrow('SFT stopped at step 2, before its last');
    expect(() => readSftMetrics(join(dir, 'nowhere'))).toThrow(
      `${join(dir, 'nowhere', 'metrics.json')}: the trainer did not write it`,
    );
  });

  it("reads the PPO service's final version and refuses an unfinished or malformed one", () => {
    const out = write('progress.json', JSON.stringify({ finished: true, step: 3, steps: 3, version: 4 }));
    expect(readPpoProgress(out).version).toBe(4);
    write('progress.json', JSON.stringify({ finished: false, step: 1, steps: 3, version: 2 }));
    expect(() => readPpoProgress(out)).toThrow('PPO stopped at step 1 of 3');
    write('progress.json', JSON.stringify({ finished: true, step: 3, steps: 3, version: '4' }));
    expect(() => readPpoProgress(out)).toThrow('"version" should be a number, got "4"');
    write('progress.json', '[1, 2]');
    expect(() => readPpoProgress(out)).toThrow('expected a JSON object, got an array');
  });
});
