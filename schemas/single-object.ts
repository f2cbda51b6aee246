/**
 * Avro single-object encoding (Avro spec, "Single-object encoding"):
 * `C3 01` + 8-byte little-endian CRC-64-AVRO fingerprint of the writer schema's Parsing
 * Canonical Form + the Avro binary body.
 */
import { FrameDecodeError } from './errors.js';

/** The two marker bytes every single-object frame starts with. */
export const SINGLE_OBJECT_MAGIC: Readonly<Buffer> = Buffer.from([0xc3, 0x01]);

/** Marker plus fingerprint: the body starts at this offset. */
export const SINGLE_OBJECT_HEADER_LENGTH = 10;

/** A frame split into its writer fingerprint and its body (both views into the frame). */
export interface SingleObjectParts {
  /** 8 bytes exactly as on the wire (little-endian CRC-64-AVRO). */
  readonly fingerprint: Buffer;
  readonly body: Buffer;
}

/** Builds a frame from a schema fingerprint (8 bytes, wire order) and an encoded body. */
export function frameSingleObject(fingerprint: Uint8Array, body: Uint8Array): Buffer {
  if (fingerprint.length !== 8) {
    throw new RangeError(`fingerprint must be 8 bytes (CRC-64-AVRO), got ${fingerprint.length}`);
  }
  return Buffer.concat([SINGLE_OBJECT_MAGIC, fingerprint, body]);
}

/**
 * Splits a frame into fingerprint and body. Throws `FrameDecodeError` with code `bad-magic`
 * when the marker is wrong and `truncated` when the header is incomplete (an empty payload
 * included: it is a frame cut off before its first byte).
 */
export function splitSingleObject(frame: Uint8Array): SingleObjectParts {
  const bytes = Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength);
  const markerLength = Math.min(bytes.length, SINGLE_OBJECT_MAGIC.length);
  if (!bytes.subarray(0, markerLength).equals(SINGLE_OBJECT_MAGIC.subarray(0, markerLength))) {
    throw new FrameDecodeError(
      'bad-magic',
      `not an Avro single-object frame: starts with ${hexPrefix(bytes)}, expected c3 01`,
    );
  }
  if (bytes.length < SINGLE_OBJECT_HEADER_LENGTH) {
    throw new FrameDecodeError(
      'truncated',
      `single-object frame of ${bytes.length} bytes is shorter than its ` +
        `${SINGLE_OBJECT_HEADER_LENGTH}-byte header (c3 01 + 8-byte fingerprint)`,
    );
  }
  return {
    fingerprint: bytes.subarray(SINGLE_OBJECT_MAGIC.length, SINGLE_OBJECT_HEADER_LENGTH),
    body: bytes.subarray(SINGLE_OBJECT_HEADER_LENGTH),
  };
}

/** The first bytes of a payload in hex, for error messages. */
function hexPrefix(bytes: Buffer): string {
  if (bytes.length === 0) return 'nothing (empty payload)';
  const shown = bytes
    .subarray(0, 4)
    .toString('hex')
    .replace(/(..)(?!$)/g, '$1 ');
  return bytes.length > 4 ? `${shown} …` : shown;
}
