/**
 * Issue 33 #5: a JSON Lines file that cannot be written (a missing folder, a full disk) ends
 * `spa generate --out` with an error naming the file, never an unhandled 'error' event.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
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

/**
 * Issue 42 item 6: `spa generate --out` left a cut last line when a write failed part-way. Here the
 * file size limit (`ulimit -f`, Node ignores SIGXFSZ) stops a write inside a line: the command fails
 * naming the file, and the file keeps whole lines only.
 */
describe('spa generate --out when a write stops inside a line', () => {
  it('fails naming the file and leaves only whole lines', () => {
    const dir = mkdtempSync(join(tmpdir(), 'spa-jsonl-cut-'));
    const out = join(dir, 'rows.jsonl');
    const generate = [
      'bin/spa.mjs generate --env sokoban --groups 6 --group-size 2 --batches 1 --run-id cut',
      `--out ${out}`,
    ].join(' ');
    // 8 KiB per file: each output file passes it inside some line. No tsx cache: its files would hit the limit too.
    const run = spawnSync('bash', ['-c', `ulimit -f 8 && exec "${process.execPath}" ${generate}`], {
      encoding: 'utf8',
      env: { ...process.env, TSX_DISABLE_CACHE: '1' },
      timeout: 540_000, // seconds when idle; minutes on a box busy with other work
    });
    expect(run.status, run.stderr).not.toBe(0);
    expect(run.stderr).toMatch(/cannot write .*\.jsonl: EFBIG/);
    for (const file of readdirSync(dir)) {
      const text = readFileSync(join(dir, file), 'utf8');
      if (text === '') continue;
      expect(text.endsWith('\n'), `${file} ends in a cut line`).toBe(true);
      for (const line of text.trimEnd().split('\n')) expect(() => JSON.parse(line), file).not.toThrow();
    }
  }, 600_000);
});
