/**
 * `spa tap`: an ephemeral consumer that prints records readably and commits nothing. It reads
 * through {@link readTopic} (a fresh group, deleted on exit; no offset written, the position
 * kept by the read, so a broker restart neither repeats nor skips a record) and stops at the
 * end offsets captured at start unless following.
 */
import { filter, lastValueFrom, map, NEVER, take, takeUntil, tap, type Observable } from 'rxjs';
import { decodeAnySpaRecord } from '../../streams/kafka/consume-spa-decode.js';
import { readTopic, type KafkaConnection } from '../../streams/kafka/consume-spa.js';
import { matchesTapFilters, type TapFilter } from '../../streams/kafka/tap-filter.js';
import { formatTapRecord, tapJsonLine } from './tap-format.js';

/** Options of {@link tapTopic}. */
export interface TapOptions {
  readonly topic: string;
  /** `earliest`: the retained history first (default); `latest`: only records written from now on. */
  readonly start: 'earliest' | 'latest';
  readonly follow: boolean;
  readonly filters: readonly TapFilter[];
  /** Stop after printing this many records. */
  readonly limit?: number;
  readonly json: boolean;
  /** Also print each record's headers (traceparent, schema fingerprint, policy version). */
  readonly headers?: boolean;
  /** Where each printed record goes (one call per record). */
  readonly write: (text: string) => void;
  /** Ends the tap (e.g. SIGINT while following); the tap is closed within 2 s of it. */
  readonly stop?: Observable<unknown>;
  /** Where `[tap]` status lines go (the broker connection lost, and where the read resumes). */
  readonly log?: (line: string) => void;
}

/** What a tap did. */
export interface TapSummary {
  readonly read: number;
  readonly printed: number;
  readonly groupId: string;
}

/** Prints `topic`'s records until its end (or `limit`, or `stop` when following). */
export async function tapTopic(kafka: KafkaConnection, options: TapOptions): Promise<TapSummary> {
  const read = await readTopic(kafka, {
    topic: options.topic,
    start: { kind: options.start },
    follow: options.follow,
    purpose: 'spa-tap',
    maxInFlight: 64,
    log: (line) => options.log?.(`[tap] ${line}`),
  });
  let readCount = 0;
  let printed = 0;
  try {
    await lastValueFrom(
      read.records.pipe(
        takeUntil(options.stop ?? NEVER),
        map(({ record, ack }) => {
          readCount += 1;
          ack(); // printing is synchronous: the record is done once decoded
          return decodeAnySpaRecord(record);
        }),
        filter((decoded) => matchesTapFilters(decoded, options.filters)),
        options.limit === undefined ? (source) => source : take(options.limit),
        tap((decoded) => {
          printed += 1;
          const withHeaders = options.headers ?? false;
          options.write(
            options.json ? tapJsonLine(decoded, withHeaders) : formatTapRecord(decoded, withHeaders),
          );
        }),
      ),
      { defaultValue: undefined },
    );
  } finally {
    await read.closed;
  }
  return { read: readCount, printed, groupId: read.groupId };
}
