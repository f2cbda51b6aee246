/**
 * CRC-64-AVRO (the Rabin fingerprint of the Avro specification, "Schema Fingerprints").
 *
 * Hand-written because no maintained npm package offers this variant: avsc fingerprints with
 * node:crypto hashes only (md5 by default), and the generic CRC packages ship CRC-64/ECMA-182,
 * CRC-64/XZ or CRC-64/NVME, which use other polynomials and initial values. The algorithm is
 * the spec's own ten-line reference; test/schemas/fingerprint.test.ts checks it against the
 * spec's test vectors (apache/avro share/test/data/schema-tests.txt).
 */

/** The spec's EMPTY constant: initial value and (reflected) polynomial. */
const EMPTY = 0xc15d213aa4d7a795n;
const MASK64 = 0xffffffffffffffffn;

/** 256-entry table, built once exactly as in the spec. */
const TABLE: readonly bigint[] = Array.from({ length: 256 }, (_, index) => {
  let fp = BigInt(index);
  for (let bit = 0; bit < 8; bit++) fp = (fp >> 1n) ^ (EMPTY & -(fp & 1n));
  return fp & MASK64;
});

/** The 64-bit CRC-64-AVRO fingerprint of `bytes` as an unsigned bigint. */
export function crc64Avro(bytes: Uint8Array): bigint {
  let fp = EMPTY;
  for (const byte of bytes) {
    // TABLE has 256 entries and the index is masked to 0..255, so it is always defined.
    fp = (fp >> 8n) ^ (TABLE[Number((fp ^ BigInt(byte)) & 0xffn)] as bigint);
  }
  return fp;
}

/** The fingerprint as the 8 little-endian bytes that single-object encoding writes. */
export function crc64AvroLittleEndian(bytes: Uint8Array): Buffer {
  const out = Buffer.alloc(8);
  out.writeBigUInt64LE(crc64Avro(bytes));
  return out;
}
