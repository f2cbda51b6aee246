import avro from 'avsc';
import type { Schema } from 'avsc';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fingerprintHex, parsingCanonicalForm, schemaFingerprint } from '../../schemas/index.js';
import { crc64Avro } from '../../schemas/internal/crc64-avro.js';

interface SpecVector {
  readonly id: string;
  readonly input: string;
  readonly canonical: string;
  readonly fingerprint: string | null;
}

// apache/avro share/test/data/schema-tests.txt, transcribed (source named in the fixture).
const spec = JSON.parse(
  readFileSync(new URL('../fixtures/avro/avro-spec-schema-tests.json', import.meta.url), 'utf8'),
) as { vectors: SpecVector[] };

/** The spec's fingerprints are Java longs: reinterpret as unsigned 64-bit. */
function unsigned(decimal: string): bigint {
  return BigInt.asUintN(64, BigInt(decimal));
}

/** Bit-at-a-time CRC-64-AVRO straight from the polynomial, to cross-check the table version. */
function crc64Bitwise(bytes: Uint8Array): bigint {
  const EMPTY = 0xc15d213aa4d7a795n;
  let fp = EMPTY;
  for (const byte of bytes) {
    fp ^= BigInt(byte);
    for (let bit = 0; bit < 8; bit++) fp = (fp >> 1n) ^ (fp & 1n ? EMPTY : 0n);
  }
  return fp;
}

describe('CRC-64-AVRO', () => {
  const withFingerprint = spec.vectors.filter((v) => v.fingerprint !== null);

  it('has the spec vectors to check against', () => {
    expect(withFingerprint.length).toBeGreaterThanOrEqual(25);
  });

  it.each(withFingerprint)('matches spec vector $id ($canonical)', (vector) => {
    expect(crc64Avro(Buffer.from(vector.canonical, 'utf8'))).toBe(unsigned(vector.fingerprint as string));
  });

  it('agrees with a bit-at-a-time implementation on arbitrary bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => crc64Avro(bytes) === crc64Bitwise(bytes)),
    );
  });
});

describe('Parsing Canonical Form via avsc Type#schema()', () => {
  // avsc refuses two spec inputs, so they cannot be compiled (their fingerprints are still
  // checked above): 016 is the empty union [], 026 gives a boolean field the string default "true".
  const refused: Readonly<Record<string, RegExp>> = {
    '016': /empty union/,
    '026': /incompatible field default "true"/,
  };
  const compilable = spec.vectors.filter((v) => !(v.id in refused));

  it.each(compilable)('canonicalises spec vector $id', (vector) => {
    const type = avro.Type.forSchema(JSON.parse(vector.input) as Schema, { registry: {} });
    expect(parsingCanonicalForm(type)).toBe(vector.canonical);
  });

  it.each(Object.entries(refused))('refuses spec vector %s for the documented reason', (id, reason) => {
    const vector = spec.vectors.find((v) => v.id === id);
    expect(() => avro.Type.forSchema(JSON.parse(vector?.input ?? '') as Schema)).toThrow(reason);
  });

  it('canonicalises vector 026 once its default is a real boolean (aliases, order, doc dropped)', () => {
    const vector = spec.vectors.find((v) => v.id === '026');
    const input = (vector?.input ?? '').replace('"default":"true"', '"default":true');
    expect(parsingCanonicalForm(avro.Type.forSchema(JSON.parse(input) as Schema))).toBe(vector?.canonical);
  });

  it('writes the fingerprint little-endian, as single-object headers need', () => {
    const type = avro.Type.forSchema('null');
    // spec vector 000: 7195948357588979594 = 0x63dd24e7cc258f8a
    expect(fingerprintHex(schemaFingerprint(type))).toBe('8a8f25cce724dd63');
  });

  it('ignores docs, defaults and logical types but not field order', () => {
    const base = { type: 'record', name: 'R', namespace: 'spa.v1', fields: [] as object[] };
    const a = {
      ...base,
      fields: [
        { name: 'x', type: 'long' },
        { name: 'y', type: 'string' },
      ],
    };
    const documented = {
      ...base,
      doc: 'docs do not count',
      fields: [
        { name: 'x', type: { type: 'long', logicalType: 'timestamp-millis' }, doc: 'x' },
        { name: 'y', type: 'string', default: '' },
      ],
    };
    const swapped = {
      ...base,
      fields: [
        { name: 'y', type: 'string' },
        { name: 'x', type: 'long' },
      ],
    };
    const fp = (s: object): string => fingerprintHex(schemaFingerprint(avro.Type.forSchema(s as Schema)));
    expect(fp(documented)).toBe(fp(a));
    expect(fp(swapped)).not.toBe(fp(a));
  });
});
