/**
 * Typed failures of the Avro layer, and the reasons a record goes to a dead-letter topic. The
 * Kafka layer routes a `FrameDecodeError` to spa.dlq with `code` as the Rejected.reason, so the
 * codes are part of the contract.
 */
import rejectReasons from './reject-reasons.json' with { type: 'json' };

/**
 * Why a record was dead-lettered (Rejected.reason): a code of schemas/reject-reasons.json, the one
 * list the pipeline and the trainer share (trainer/spa_trainer/data/reject_reasons.py reads it too).
 */
export type RejectReason = keyof typeof rejectReasons;

/** Every reject reason with its meaning (schemas/reject-reasons.json). */
export const REJECT_REASONS: Readonly<Record<RejectReason, string>> = rejectReasons;

/** True when `code` is a listed reject reason (a parser reason read back from a record, say). */
export function isRejectReason(code: string | null | undefined): code is RejectReason {
  return code !== null && code !== undefined && Object.hasOwn(REJECT_REASONS, code);
}

/** Why a single-object frame could not be decoded (each a {@link RejectReason}). */
export type FrameDecodeErrorCode =
  /** The frame does not start with the single-object marker C3 01. */
  | 'bad-magic'
  /** The frame ends inside the 10-byte header or inside the Avro body. */
  | 'truncated'
  /** The header names a schema fingerprint no known schema version has. */
  | 'unknown-fingerprint'
  /** The writer schema is known but belongs to another record than the reader expects. */
  | 'wrong-record'
  /** Writer and reader schema versions cannot be resolved against each other. */
  | 'incompatible-schema'
  /** The body decoded but bytes are left over after the record. */
  | 'trailing-bytes'
  /** The body is not a valid encoding of the writer schema (bad varint, bad union index, …). */
  | 'bad-body';

/** A frame that cannot become a record; `fingerprint` is the header's, when it could be read. */
export class FrameDecodeError extends Error {
  /** Machine-readable reason (used as Rejected.reason on spa.dlq). */
  readonly code: FrameDecodeErrorCode;
  /** The writer fingerprint from the header (8 bytes, wire order), or null if unreadable. */
  readonly fingerprint: Buffer | null;

  constructor(code: FrameDecodeErrorCode, message: string, fingerprint: Buffer | null = null) {
    super(message);
    this.name = 'FrameDecodeError';
    this.code = code;
    this.fingerprint = fingerprint;
  }
}

/** A value that does not match its schema; `problems` lists each bad field path. */
export class RecordEncodeError extends Error {
  /** Full name of the record schema, e.g. spa.v1.Trajectory. */
  readonly record: string;
  /** One entry per invalid value: `path: got <json>, expected <schema>`. */
  readonly problems: readonly string[];

  constructor(record: string, problems: readonly string[]) {
    super(`cannot encode ${record}: ${problems.join('; ')}`);
    this.name = 'RecordEncodeError';
    this.record = record;
    this.problems = problems;
  }
}

/** A schema file that cannot be loaded (bad JSON, bad Avro, misnamed, duplicated version). */
export class SchemaLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SchemaLoadError';
  }
}
