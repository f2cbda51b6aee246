/**
 * The Avro layer's public API: typed single-object codecs for every record on every topic.
 *
 *   const registry = spaSchemas();
 *   const frame = registry.encode('SftRow', row);        // C3 01 + fingerprint + body
 *   const again = registry.decode('SftRow', frame);      // any known writer version
 *
 * Decoding failures are `FrameDecodeError`s whose `code` the Kafka layer puts in Rejected.reason.
 */
import { loadSchemaVersions, SCHEMA_DIR } from './load.js';
import { SchemaRegistry } from './registry.js';
import type { SpaRecordTypes } from './generated/types.js';

export type * from './generated/types.js';
export { FrameDecodeError, isRejectReason, RecordEncodeError, SchemaLoadError } from './errors.js';
export type { FrameDecodeErrorCode, RejectReason } from './errors.js';
export { fingerprintHex, parsingCanonicalForm, schemaFingerprint } from './fingerprint.js';
export { loadSchemaVersions, SCHEMA_DIR } from './load.js';
export { encodeWith, SchemaRegistry } from './registry.js';
export type { RecordName } from './registry.js';
export { compileSchemaVersion } from './schema-version.js';
export type { SchemaVersion } from './schema-version.js';
export {
  frameSingleObject,
  splitSingleObject,
  SINGLE_OBJECT_HEADER_LENGTH,
  SINGLE_OBJECT_MAGIC,
} from './single-object.js';

let shared: SchemaRegistry<SpaRecordTypes> | undefined;

/**
 * The registry of the project's schemas (schemas/*.avsc plus schemas/history), loaded once per
 * process. Pass `dir` to load another directory (a fresh registry, not cached).
 */
export function spaSchemas(dir?: string): SchemaRegistry<SpaRecordTypes> {
  if (dir !== undefined && dir !== SCHEMA_DIR) return new SchemaRegistry(loadSchemaVersions(dir));
  shared ??= new SchemaRegistry<SpaRecordTypes>(loadSchemaVersions(SCHEMA_DIR));
  return shared;
}
