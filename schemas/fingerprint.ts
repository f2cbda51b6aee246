/**
 * Parsing Canonical Form and CRC-64-AVRO fingerprints of avsc types (Avro spec, "Parsing
 * Canonical Form for Schemas" and "Schema Fingerprints").
 */
import type { Type } from 'avsc';
import { crc64AvroLittleEndian } from './internal/crc64-avro.js';

/**
 * The schema's Parsing Canonical Form. avsc's `Type#schema()` without options already emits it
 * (full names, no doc/aliases/defaults/logicalType, canonical key order, no whitespace);
 * test/schemas/fingerprint.test.ts pins that against the spec's test vectors.
 */
export function parsingCanonicalForm(type: Type): string {
  return JSON.stringify(type.schema());
}

/** CRC-64-AVRO of the Parsing Canonical Form, as the 8 little-endian bytes of a frame header. */
export function schemaFingerprint(type: Type): Buffer {
  return crc64AvroLittleEndian(Buffer.from(parsingCanonicalForm(type), 'utf8'));
}

/** Lower-case hex of a fingerprint in wire order, e.g. for logs and map keys. */
export function fingerprintHex(fingerprint: Uint8Array): string {
  return Buffer.from(fingerprint.buffer, fingerprint.byteOffset, fingerprint.byteLength).toString('hex');
}
