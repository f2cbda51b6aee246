import { once } from 'node:events';
import { createWriteStream, type WriteStream } from 'node:fs';
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
 * Resolves with the number of lines written per topic.
 */
export async function writeJsonl(
  source: Observable<Outbound>,
  paths: JsonlPaths,
  gate?: DemandGate,
): Promise<Record<OutboundTopic, number>> {
  const streams = new Map<OutboundTopic, WriteStream>();
  const counts: Record<OutboundTopic, number> = { trajectories: 0, sft: 0, rollouts: 0, dlq: 0 };
  const streamFor = (topic: OutboundTopic): WriteStream | undefined => {
    const path = paths[topic];
    if (path === undefined) return undefined;
    let stream = streams.get(topic);
    if (!stream) {
      stream = createWriteStream(path, { encoding: 'utf8' });
      streams.set(topic, stream);
    }
    return stream;
  };
  // Create every configured file up front, so an empty output is an empty file, not a missing one.
  for (const topic of Object.keys(paths) as OutboundTopic[]) streamFor(topic);
  try {
    await lastValueFrom(
      source.pipe(
        tap(() => gate?.add()),
        concatMap(async (outbound) => {
          const stream = streamFor(outbound.topic);
          if (!stream) return gate?.done();
          counts[outbound.topic]++;
          if (!stream.write(toJsonLine(outbound) + '\n')) await once(stream, 'drain');
          gate?.done();
        }),
      ),
      { defaultValue: undefined },
    );
  } finally {
    await Promise.all([...streams.values()].map((s) => new Promise((resolve) => s.end(resolve))));
  }
  return counts;
}
