import { lastValueFrom, reduce } from 'rxjs';
import type { RecordHeaders } from '../../infra/kafka/client/transport.js';
import { readTopic, type KafkaConnection } from './consume-spa.js';
import { decodeSpaHeaders } from './headers.js';

/** What a topic holds committed under some keys: the records, and the batches of each policy version. */
export interface CommittedCounts {
  readonly records: number;
  /**
   * Policy version (the `spa-policy-version` header) → batches whose records carry it; a batch is
   * the `<run>/<split>/b<n>` its keys start with (streams/episodes/episodes.ts). A batch whose
   * groups played two versions (a sharded generator ahead of another) counts under each.
   */
  readonly batchesByVersion: Record<string, number>;
}

/** The `<run>/<split>/b<n>` a group or trajectory id starts with. */
const BATCH = /^[^/]*\/[^/]*\/b\d+(?=\/)/;

/** A record's policy version; none for a header that is not one (the trainer dead-letters those). */
function policyVersion(headers: RecordHeaders): number | undefined {
  try {
    return decodeSpaHeaders(headers).policyVersion;
  } catch {
    return undefined;
  }
}

/**
 * Counts the records of `topic` whose keys `keys` matches, committed (read_committed, up to the
 * last stable offset at the start of the read): what every attempt of a run left there, not what
 * the last attempt remembers. Keys and headers only: no value is decoded. The read blocks (256
 * records in flight), it does not buffer.
 */
export async function committedCounts(
  kafka: KafkaConnection,
  topic: string,
  keys: RegExp,
): Promise<CommittedCounts> {
  const read = await readTopic(kafka, { topic, start: { kind: 'earliest' }, purpose: 'spa-count' });
  const { records, batches } = await lastValueFrom(
    read.records.pipe(
      reduce(
        (found, { record, ack }) => {
          const key = record.key?.toString('utf8') ?? '';
          if (keys.test(key)) {
            found.records++;
            const version = policyVersion(record.headers);
            const batch = BATCH.exec(key)?.[0];
            if (version !== undefined && batch !== undefined) found.batches.add(`${version} ${batch}`);
          }
          ack();
          return found;
        },
        { records: 0, batches: new Set<string>() },
      ),
    ),
  );
  await read.closed;
  const batchesByVersion: Record<string, number> = {};
  for (const entry of batches) {
    const version = entry.split(' ')[0]!;
    batchesByVersion[version] = (batchesByVersion[version] ?? 0) + 1;
  }
  return { records, batchesByVersion };
}
