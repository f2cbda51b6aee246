import {
  fingerprintHex,
  FrameDecodeError,
  spaSchemas,
  type SpaRecordName,
  type SpaRecordTypes,
} from '../../schemas/index.js';
import type { Rejected, RejectReason } from '../../schemas/index.js';
import type { Outbound } from '../../schemas/outbound.js';
import { decodeSpaHeaders, encodeSpaHeaders } from './headers.js';
import type { ConsumedRecord, OutgoingRecord, RecordHeaders } from '../../infra/kafka/client/transport.js';

/** The Avro record written to each logical topic. */
const RECORD_OF_TOPIC = {
  trajectories: 'Trajectory',
  sft: 'SftRow',
  rollouts: 'Rollout',
  dlq: 'Rejected',
  policy: 'PolicyUpdate',
} as const satisfies Record<string, SpaRecordName>;

/** The policy version a record carries, for the `spa-policy-version` header. */
function policyVersionOf(outbound: Outbound): number | undefined {
  switch (outbound.topic) {
    case 'trajectories':
    case 'sft':
    case 'rollouts':
      return outbound.record.policy_version;
    case 'dlq':
      return undefined;
  }
}

/**
 * The header text of a schema version's fingerprint, hex-encoded once per version: per record,
 * the encoding showed in the ingest's CPU profile
 * (docs/experiments/2026-11-25-kafka-throughput-levers.md).
 */
const fingerprintTexts = new WeakMap<object, string>();
function fingerprintText(name: SpaRecordName): string {
  const version = spaSchemas().current(name);
  let text = fingerprintTexts.get(version);
  if (text === undefined) fingerprintTexts.set(version, (text = fingerprintHex(version.fingerprint)));
  return text;
}

/**
 * An outbound record as a Kafka record: Avro single-object value, UTF-8 key, and the SPA
 * headers (schema fingerprint, policy version, the producing span's traceparent when given).
 */
export function toKafkaRecord(outbound: Outbound, topicName: string, traceparent?: string): OutgoingRecord {
  const name = RECORD_OF_TOPIC[outbound.topic];
  const value = spaSchemas().encode(name, outbound.record as never);
  const version = policyVersionOf(outbound);
  return {
    topic: topicName,
    key: Buffer.from(outbound.key, 'utf8'),
    value,
    headers: encodeSpaHeaders({
      schemaFingerprint: fingerprintText(name),
      ...(version !== undefined ? { policyVersion: version } : {}),
      ...(traceparent !== undefined ? { traceparent } : {}),
    }),
  };
}

/** A consumed record decoded as `name`, or the dead letter that explains why it could not be. */
export type DecodedRecord<N extends SpaRecordName> =
  | {
      readonly ok: true;
      readonly record: SpaRecordTypes[N];
      readonly headers: RecordHeaders;
      readonly source: ConsumedRecord;
    }
  | { readonly ok: false; readonly rejected: Rejected; readonly source: ConsumedRecord };

/**
 * Decodes a consumed value as `name`, resolving older writer schemas. Anything undecodable —
 * bad magic, an unknown fingerprint, a truncated or corrupt body (the FrameDecodeError's code),
 * bad headers (`bad-header`) — becomes a Rejected record carrying the original bytes and the
 * reason, so the consumer carries on and nothing is lost.
 */
export function decodeKafkaRecord<N extends SpaRecordName>(
  name: N,
  consumed: ConsumedRecord,
  now = Date.now(),
): DecodedRecord<N> {
  const value = consumed.value ?? Buffer.alloc(0);
  try {
    decodeSpaHeaders(consumed.headers);
  } catch (error) {
    return undecodable(consumed, value, 'bad-header', error, now);
  }
  try {
    return {
      ok: true,
      record: spaSchemas().decode(name, value),
      headers: consumed.headers,
      source: consumed,
    };
  } catch (error) {
    // The registry wraps every body failure in a FrameDecodeError; anything else is a body it could not read.
    return undecodable(
      consumed,
      value,
      error instanceof FrameDecodeError ? error.code : 'bad-body',
      error,
      now,
    );
  }
}

/** The dead letter of a consumed record that could not be decoded: its bytes and why. */
function undecodable(
  consumed: ConsumedRecord,
  value: Buffer,
  reason: RejectReason,
  error: unknown,
  now: number,
): { readonly ok: false; readonly rejected: Rejected; readonly source: ConsumedRecord } {
  const fingerprint =
    value.length >= 10 && value[0] === 0xc3 && value[1] === 0x01 ? value.subarray(2, 10) : null;
  return {
    ok: false,
    source: consumed,
    rejected: {
      key: consumed.key?.toString('utf8') ?? null,
      source: `${consumed.topic}[${consumed.partition}]@${consumed.offset}`,
      reason,
      detail: error instanceof Error ? error.message : String(error),
      payload: Buffer.from(value),
      payload_fingerprint: fingerprint ? Buffer.from(fingerprint) : null,
      created_at: now,
    },
  };
}
