/**
 * Issue 33 #5: a JSON Lines file that cannot be written (a missing folder, a full disk) ends
 * `spa generate --out` with an error naming the file, never an unhandled 'error' event.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { from } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { SftRow } from '../../schemas/index.js';
import type { Outbound } from '../../schemas/outbound.js';
import { writeJsonl } from '../../streams/files/jsonl-sink.js';
import { GOLDEN_SAMPLES } from '../fixtures/avro/samples.js';

const row = GOLDEN_SAMPLES['SftRow.v1'] as SftRow;
const rows = (n: number): Outbound[] =>
  Array.from({ length: n }, (_, i) => ({ topic: 'sft', key: `k${i}`, record: row }));

describe('writeJsonl on files it cannot write', () => {
  it('rejects naming a path whose folder does not exist', async () => {
    await expect(writeJsonl(from(rows(2)), { sft: '/nonexistent/dir/x.jsonl' })).rejects.toThrow(
      /cannot write \/nonexistent\/dir\/x\.jsonl: ENOENT/,
    );
  });

  it('rejects naming a full disk (/dev/full) and still closes the other files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spa-jsonl-'));
    const trajectories = join(dir, 't.jsonl');
    await expect(writeJsonl(from(rows(200)), { sft: '/dev/full', trajectories })).rejects.toThrow(
      /cannot write \/dev\/full: ENOSPC/,
    );
    expect(readFileSync(trajectories, 'utf8')).toBe('');
  });

  it('writes every line when the files are fine', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'spa-jsonl-')), 'x.jsonl');
    const counts = await writeJsonl(from(rows(3)), { sft: out });
    expect(counts.sft).toBe(3);
    expect(readFileSync(out, 'utf8').trim().split('\n')).toHaveLength(3);
  });
});
