import { open, type FileHandle } from 'node:fs/promises';
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
 * One JSON Lines file that never ends in a cut line: each line is one write() of the whole line
 * (looped only if the kernel takes part of it), and a write that fails part-way (a full disk, a file
 * size limit) truncates the file back to its last whole line before the error is reported. A
 * SIGKILL can still stop a write() of a line longer than a page at a page boundary (the kernel
 * checks for it between pages); `spa generate` starts each file afresh, so a rerun leaves none.
 */
class JsonlFile {
  /** Bytes of whole lines written: the length the file is cut back to after a failed write. */
  private whole = 0;

  private constructor(
    readonly path: string,
    private readonly handle: FileHandle,
  ) {}

  static async open(path: string): Promise<JsonlFile> {
    try {
      return new JsonlFile(path, await open(path, 'w'));
    } catch (error) {
      throw cannotWrite(path, error);
    }
  }

  async writeLine(line: string): Promise<void> {
    const bytes = Buffer.from(`${line}\n`, 'utf8');
    try {
      for (let done = 0; done < bytes.length;)
        done += (await this.handle.write(bytes, done, bytes.length - done, this.whole + done)).bytesWritten;
      this.whole += bytes.length;
    } catch (error) {
      await this.handle.truncate(this.whole).catch(() => undefined);
      throw cannotWrite(this.path, error);
    }
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

const cannotWrite = (path: string, error: unknown): Error =>
  new Error(`cannot write ${path}: ${error instanceof Error ? error.message : String(error)}`, {
    cause: error,
  });

/**
 * Writes each record as one JSON line to its topic's file, one record at a time (concatMap: the
 * pipeline blocks on each write, nothing piles up). Resolves with the number of lines written per
 * topic; a file that cannot be opened or written (a missing folder, a full disk) rejects naming its
 * path, after the other files are closed, and keeps only whole lines ({@link JsonlFile}).
 */
export async function writeJsonl(
  source: Observable<Outbound>,
  paths: JsonlPaths,
  gate?: DemandGate,
): Promise<Record<OutboundTopic, number>> {
  const files = new Map<OutboundTopic, JsonlFile>();
  const counts: Record<OutboundTopic, number> = { trajectories: 0, sft: 0, rollouts: 0, dlq: 0 };
  try {
    // Every configured file is opened before the first record, so an empty output is an empty
    // file, not a missing one, and a path that cannot be written fails before any work.
    for (const [topic, path] of Object.entries(paths) as [OutboundTopic, string][])
      files.set(topic, await JsonlFile.open(path));
    await lastValueFrom(
      source.pipe(
        tap(() => gate?.add()),
        concatMap(async (outbound) => {
          const file = files.get(outbound.topic);
          if (file) {
            await file.writeLine(toJsonLine(outbound));
            counts[outbound.topic]++;
          }
          gate?.done();
        }),
      ),
      { defaultValue: undefined },
    );
  } finally {
    await Promise.all([...files.values()].map((file) => file.close().catch(() => undefined)));
  }
  return counts;
}
