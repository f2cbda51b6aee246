/**
 * Record-at-a-time writes over a {@link RecordSink}, gathered into batches (up to
 * `maxBatchRecords`, or whatever arrived within `lingerMs`). Adapter-independent, because
 * kafkajs has no linger of its own. Backpressure policy: **block** — at most one batch is in
 * flight and one is filling; a `write` that finds the filling batch full waits for room
 * instead of queueing, so memory stays within two batches plus the callers' own records.
 */
import type { OutgoingRecord, RecordSink } from './transport.js';

/** Batching knobs. */
export interface BatchingOptions {
  /** Default 500. */
  readonly maxBatchRecords?: number;
  /** How long a partly filled batch waits for company. Default 5 ms. */
  readonly lingerMs?: number;
}

/** Writes records one by one; each promise settles when its batch is acknowledged (or fails). */
export interface BatchingWriter {
  write(record: OutgoingRecord): Promise<void>;
  /** Sends what is filling now and waits for everything written so far. */
  flush(): Promise<void>;
}

interface Pending {
  readonly records: OutgoingRecord[];
  readonly settled: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

function pending(): Pending {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const settled = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  settled.catch(() => undefined); // observed by writers; avoid an unhandled rejection here
  return { records: [], settled, resolve, reject };
}

/** Wraps a sink in a batching writer. */
export function batchingWriter(sink: RecordSink, options: BatchingOptions = {}): BatchingWriter {
  const maxBatchRecords = options.maxBatchRecords ?? 500;
  const lingerMs = options.lingerMs ?? 5;
  if (!Number.isInteger(maxBatchRecords) || maxBatchRecords < 1)
    throw new Error(`maxBatchRecords=${maxBatchRecords} must be an integer >= 1`);
  let filling = pending();
  let inFlight: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;

  const ship = (): Promise<void> => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const batch = filling;
    if (batch.records.length === 0) return inFlight;
    filling = pending();
    // Chained: the next batch leaves only after the previous one is acknowledged.
    inFlight = inFlight.then(() =>
      sink.send(batch.records).then(
        () => batch.resolve(),
        (error: unknown) => batch.reject(error),
      ),
    );
    return inFlight;
  };

  const write = async (record: OutgoingRecord): Promise<void> => {
    // Block while the filling batch is full and the previous one is still in flight.
    while (filling.records.length >= maxBatchRecords) await ship();
    const batch = filling;
    batch.records.push(record);
    if (batch.records.length >= maxBatchRecords) void ship();
    else timer ??= setTimeout(() => void ship(), lingerMs);
    return batch.settled;
  };

  return {
    write,
    async flush() {
      await ship();
    },
  };
}
