import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
import { finished } from 'node:stream/promises';
import { concatMap, lastValueFrom, tap, type Observable } from 'rxjs';
import type { Outbound, OutboundTopic } from '../../schemas/outbound.js';
import type { DemandGate } from '../demand-gate.js';

/** Which file each logical topic goes to; a topic without a path is not written. */
export type JsonlPaths = Partial<Record<OutboundTopic, string>>;

/** The files beside `out` used by `spa generate --out <file>`. */
export function jsonlPathsBeside(out: string, target: 'sft' | 'rollouts'): JsonlPaths {
  const base = out.replace(/\.jsonl$/, '');
  return { [target]: out, dlq: `${base}.rejected.jsonl`, trajectories: `${base}.trajectories.jsonl` };
}

/** A record as a JSON line; a dead letter's payload (the trajectory JSON) is inlined as an object. */
export function toJsonLine(outbound: Outbound): string {
  if (outbound.topic === 'dlq') {
    const { payload, payload_fingerprint: _fingerprint, ...rest } = outbound.record;
    return JSON.stringify({ ...rest, payload: JSON.parse(payload.toString('utf8')) as unknown });
  }
  return JSON.stringify(outbound.record);
}

/**
 * Writes each record as one JSON line to its topic's file, one record at a time (concatMap) and
 * waiting for `drain` when a file's buffer is full: the pipeline blocks, nothing piles up.
 * Resolves with the number of lines written per topic; a file that cannot be opened or written
 * (a missing folder, a full disk) rejects naming its path, after the other files are closed.
 */
export async function writeJsonl(
  source: Observable<Outbound>,
  paths: JsonlPaths,
  gate?: DemandGate,
): Promise<Record<OutboundTopic, number>> {
  const streams = new Map<OutboundTopic, WriteStream>();
  const counts: Record<OutboundTopic, number> = { trajectories: 0, sft: 0, rollouts: 0, dlq: 0 };
  // The first error of any file; a stream's 'error' is kept here (never unhandled) and ends the write.
  let failure: Error | undefined;
  const fail = (path: string) => (error: Error) =>
    void (failure ??= new Error(`cannot write ${path}: ${error.message}`, { cause: error }));
  try {
    // Every configured file is opened before the first record, so an empty output is an empty
    // file, not a missing one, and a path that cannot be written fails before any work.
    for (const [topic, path] of Object.entries(paths) as [OutboundTopic, string][]) {
      const stream = createWriteStream(path, { encoding: 'utf8' }).on('error', fail(path));
      streams.set(topic, stream);
      await once(stream, 'open').catch(() => undefined);
      if (failure) throw failure;
    }
    await lastValueFrom(
      source.pipe(
        tap(() => gate?.add()),
        concatMap(async (outbound) => {
          const stream = streams.get(outbound.topic);
          if (failure) throw failure;
          if (!stream) return gate?.done();
          counts[outbound.topic]++;
          if (!stream.write(toJsonLine(outbound) + '\n')) await once(stream, 'drain').catch(() => undefined);
          if (failure) throw failure;
          gate?.done();
        }),
      ),
      { defaultValue: undefined },
    );
  } finally {
    await Promise.all([...streams.values()].map((s) => (s.end(), finished(s).catch(() => undefined))));
  }
  if (failure) throw failure;
  return counts;
}
