/**
 * SPA-format rows as JSON Lines: one object per line with exactly the released columns, keys in
 * SPA's order and prompt messages as `{content, role}` (the order `toSpaDatasetRow` builds).
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { finished } from 'node:stream/promises';
import type { SpaDatasetRow, SpaDatasetSink } from './spa-dataset.js';

/**
 * Writes rows to `path` as JSON Lines (SPA's columns unless told). `write` waits for `drain` when
 * the file's buffer is full, so a fast reader blocks instead of piling lines up in memory.
 */
export function spaJsonlSink<Row = SpaDatasetRow>(path: string): SpaDatasetSink<Row> {
  const stream = createWriteStream(path, { encoding: 'utf8' });
  return {
    async write(row: Row): Promise<void> {
      if (!stream.write(JSON.stringify(row) + '\n')) await once(stream, 'drain');
    },
    async close(): Promise<void> {
      stream.end();
      await finished(stream);
    },
  };
}
