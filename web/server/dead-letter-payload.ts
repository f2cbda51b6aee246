/**
 * What a dead letter's payload holds, for the web tap: a rejected trajectory or SFT row as JSON
 * (`toRejected` writes them so), or anything else. A payload is anyone's bytes (the trainer
 * dead-letters rows unchanged, any producer may write `spa.dlq`), so nothing is drawn from it
 * until avsc has checked its shape; what fails says where, for the card.
 */
import avro, { type Type } from 'avsc';
import { spaSchemas, type Trajectory } from '../../schemas/index.js';

/** The part of a rejected SftRow the page shows. */
export interface RejectedRow {
  readonly env: string;
  readonly turn: number;
  readonly response: string;
}

/** A dead letter's payload as the page can use it: at most one of trajectory and row is set. */
export interface DeadLetterPayload {
  readonly trajectory: Trajectory | null;
  readonly row: RejectedRow | null;
  /** Why a JSON payload is drawn as neither (null when it is drawn, or is not JSON). */
  readonly note: string | null;
}

/**
 * The fields of an SftRow the page draws, as an Avro record: any SftRow version (v0 has no
 * `annotation`) has them, and avsc ignores the other fields when checking.
 */
const rejectedRowType: Type = avro.Type.forSchema({
  type: 'record',
  name: 'RejectedRowView',
  fields: [
    { name: 'env', type: 'string' },
    { name: 'turn', type: 'int' },
    { name: 'response', type: 'string' },
  ],
});

/** A JSON value in a few words (no stringify: a value may be nested a million deep). */
function describe(value: unknown): string {
  if (value === undefined) return 'missing';
  if (typeof value === 'string') return JSON.stringify(value.slice(0, 24) + (value.length > 24 ? '…' : ''));
  if (Array.isArray(value)) return 'an array';
  return value !== null && typeof value === 'object' ? 'an object' : String(value);
}

/** Where `value` first breaks `type` (`turns.0.state: missing, expected string`), or null when it fits. */
function whereInvalid(type: Type, value: unknown): string | null {
  let where: string | null = null;
  const valid = type.isValid(value, {
    errorHook: (path, bad, badType) => {
      where ??= `${path.join('.') || '(top level)'}: ${describe(bad)}, expected ${badType.typeName}`;
    },
  });
  return valid ? null : (where ?? 'does not fit');
}

/** The JSON value `payload` holds, or undefined when it is not UTF-8 JSON (e.g. an Avro frame). */
function parseJson(payload: Buffer): unknown {
  try {
    return JSON.parse(payload.toString('utf8')) as unknown;
  } catch {
    return undefined; // not JSON: the card shows its size only
  }
}

/** Reads a dead letter's payload; total over any bytes. */
export function readDeadLetterPayload(payload: Buffer): DeadLetterPayload {
  const json = parseJson(payload);
  if (json === undefined) return { trajectory: null, row: null, note: null };
  const notTrajectory = whereInvalid(spaSchemas().current('Trajectory').type, json);
  if (notTrajectory === null) return { trajectory: json as Trajectory, row: null, note: null };
  const notRow = whereInvalid(rejectedRowType, json);
  if (notRow === null) {
    const { env, turn, response } = json as RejectedRow;
    return { trajectory: null, row: { env, turn, response }, note: null };
  }
  return {
    trajectory: null,
    row: null,
    note: `JSON, but not a trajectory (${notTrajectory}) nor an SFT row (${notRow})`,
  };
}
