/**
 * The trainer's run files as schemas/trainer-files.json describes them (the trainer's tests validate
 * what it writes against the same file): the fields loop/trainer-files.ts reads are required there
 * with the types it expects, and a file that follows the schema reads back.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import trainerFiles from '../../schemas/trainer-files.json' with { type: 'json' };
import { readPpoProgress, readSftMetrics } from '../../loop/trainer-files.js';

const dir = mkdtempSync(join(tmpdir(), 'trainer-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('schemas/trainer-files.json', () => {
  it('requires what the loop reads of progress.json, with its types', () => {
    const progress = trainerFiles.$defs['ppo-progress'];
    expect(progress.required).toEqual(expect.arrayContaining(['finished', 'step', 'steps', 'version']));
    expect(progress.properties.finished.type).toBe('boolean');
    for (const key of ['step', 'steps', 'version'] as const)
      expect(progress.properties[key].type).toBe('integer');
    const file = {
      finished: true,
      steps: 2,
      step: 2,
      version: 4,
      exported_step: 2,
      records_trained: 8,
      rejected: { 'bad-json': 1 },
      over_max_staleness: 0,
    };
    expect(Object.keys(file).sort()).toEqual([...progress.required].sort());
    writeFileSync(join(dir, 'progress.json'), JSON.stringify(file));
    expect(readPpoProgress(dir).version).toBe(4);
  });

  it('requires what the loop reads of metrics.json, with its types', () => {
    const metrics = trainerFiles.$defs['sft-metrics'];
    expect([...metrics.required].sort()).toEqual(['exported_version', 'finished', 'step']);
    expect(metrics.properties.exported_version.type).toEqual(['integer', 'null']);
    writeFileSync(
      join(dir, 'metrics.json'),
      JSON.stringify({ finished: true, step: 4, exported_version: 1 }),
    );
    expect(readSftMetrics(dir).exported_version).toBe(1);
  });
});
