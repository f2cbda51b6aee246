/** One version of one record schema, compiled by avsc and fingerprinted. */
import avro from 'avsc';
import type { Schema, Type } from 'avsc';
import { SchemaLoadError } from './errors.js';
import { parsingCanonicalForm, schemaFingerprint } from './fingerprint.js';

/** A compiled schema version: what the registry resolves a writer fingerprint to. */
export interface SchemaVersion {
  /** Short record name, e.g. `SftRow` (the .avsc file name). */
  readonly name: string;
  /** Namespace-qualified name, e.g. `spa.v1.SftRow`. */
  readonly fullName: string;
  /** 1 for the first released shape; each frozen change adds one (schemas/history). */
  readonly version: number;
  /** The avsc type (reader or writer). */
  readonly type: Type;
  /** Parsing Canonical Form, the text the fingerprint is computed over. */
  readonly canonicalForm: string;
  /** CRC-64-AVRO of `canonicalForm`, 8 bytes in wire (little-endian) order. */
  readonly fingerprint: Buffer;
  /** Where the schema came from (file path or a caller's label), for error messages. */
  readonly source: string;
}

/**
 * Compiles a record schema (the parsed JSON of an .avsc file). Each schema gets its own avsc
 * registry, so the same named type (spa.v1.Message) may be declared in several files.
 */
export function compileSchemaVersion(schema: unknown, version: number, source: string): SchemaVersion {
  if (!Number.isInteger(version) || version < 0) {
    throw new SchemaLoadError(`${source}: version must be a non-negative integer, got ${version}`);
  }
  let type: Type;
  try {
    type = avro.Type.forSchema(schema as Schema, { registry: {}, omitRecordMethods: true });
  } catch (error) {
    throw new SchemaLoadError(`${source}: not a valid Avro schema: ${(error as Error).message}`);
  }
  const fullName = type.name;
  if (type.typeName !== 'record' || fullName === undefined) {
    throw new SchemaLoadError(`${source}: top-level schema must be a named record, got ${type.typeName}`);
  }
  return {
    name: fullName.slice(fullName.lastIndexOf('.') + 1),
    fullName,
    version,
    type,
    canonicalForm: parsingCanonicalForm(type),
    fingerprint: schemaFingerprint(type),
    source,
  };
}
