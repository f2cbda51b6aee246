/**
 * Decoding a record whose type the reader does not know in advance (`spa tap` on any topic,
 * e.g. a replay target): the writer schema's fingerprint in the single-object header names the
 * record, which is then decoded through the current reader like any other consumer does.
 */
import { spaSchemas, type SpaRecordName, type SpaRecordTypes } from '../../schemas/index.js';
import { decodeKafkaRecord, type DecodedRecord } from './spa-records.js';
import type { ConsumedRecord, RecordHeaders } from '../../infra/kafka/client/transport.js';
import type { Rejected } from '../../schemas/index.js';

/** A decoded SPA record tagged with its record name. */
type AnySpaRecord = {
  [N in SpaRecordName]: { readonly type: N; readonly record: SpaRecordTypes[N] };
}[SpaRecordName];

/** A consumed record decoded as whatever SPA record wrote it, or the dead letter explaining why not. */
export type DecodedAnyRecord =
  | {
      readonly ok: true;
      readonly value: AnySpaRecord;
      readonly headers: RecordHeaders;
      readonly source: ConsumedRecord;
    }
  | { readonly ok: false; readonly rejected: Rejected; readonly source: ConsumedRecord };

/** The record name the frame's writer fingerprint belongs to, or undefined when it names none. */
function writerRecord(value: Buffer | null): SpaRecordName | undefined {
  try {
    return spaSchemas().writerOf(value ?? Buffer.alloc(0)).name as SpaRecordName;
  } catch {
    return undefined;
  }
}

/**
 * Decodes `consumed` as the SPA record its header names. When the header names no known
 * schema, decoding as any record fails the same way (bad-magic, truncated,
 * unknown-fingerprint: the header is checked before the record name), so the Rejected carries
 * the same reason a typed consumer would give.
 */
export function decodeAnySpaRecord(consumed: ConsumedRecord, now = Date.now()): DecodedAnyRecord {
  const name = writerRecord(consumed.value) ?? 'Rejected';
  const decoded: DecodedRecord<SpaRecordName> = decodeKafkaRecord(name, consumed, now);
  if (!decoded.ok) return decoded;
  return {
    ok: true,
    value: { type: name, record: decoded.record } as AnySpaRecord,
    headers: decoded.headers,
    source: consumed,
  };
}
