import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';

/**
 * Streams JSON Lines from `input` to `output`: one line out per line in (`answer` of it, as JSON),
 * each written as soon as computed. Backpressure: waits for the pipe to drain rather than
 * buffering without bound.
 */
export async function mapJsonLines(
  input: Readable,
  output: Writable,
  answer: (line: string) => unknown,
): Promise<void> {
  const lines = createInterface({ input, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!output.write(`${JSON.stringify(answer(line))}\n`)) await once(output, 'drain');
  }
}

/** One input line as JSON; an empty line or one that is not JSON throws, naming the `expected` object. */
export function parseJsonLine(line: string, expected: string): unknown {
  if (line.trim() === '') throw new Error('empty line; expected one JSON object per line');
  try {
    return JSON.parse(line) as unknown;
  } catch {
    throw new Error(`line is not JSON; expected ${expected}`);
  }
}
