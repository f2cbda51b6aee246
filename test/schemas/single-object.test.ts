import { describe, expect, it } from 'vitest';
import { FrameDecodeError, frameSingleObject, splitSingleObject } from '../../schemas/index.js';

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (error instanceof FrameDecodeError) return error.code;
    throw error;
  }
  throw new Error('expected a FrameDecodeError');
}

describe('single-object framing', () => {
  const fingerprint = Buffer.from('0102030405060708', 'hex');

  it('lays out C3 01, the fingerprint, then the body', () => {
    const frame = frameSingleObject(fingerprint, Buffer.from([0xaa, 0xbb]));
    expect(frame.toString('hex')).toBe('c3010102030405060708aabb');
    const parts = splitSingleObject(frame);
    expect(parts.fingerprint.equals(fingerprint)).toBe(true);
    expect(parts.body.toString('hex')).toBe('aabb');
  });

  it('accepts an empty body (a record with no fields)', () => {
    expect(splitSingleObject(frameSingleObject(fingerprint, new Uint8Array())).body.length).toBe(0);
  });

  it('reads frames that are views into a larger buffer', () => {
    const outer = Buffer.concat([Buffer.from([9, 9, 9]), frameSingleObject(fingerprint, Buffer.from([7]))]);
    const view = new Uint8Array(outer.buffer, outer.byteOffset + 3, outer.length - 3);
    expect(splitSingleObject(view).body.toString('hex')).toBe('07');
  });

  it('rejects a fingerprint that is not 8 bytes', () => {
    expect(() => frameSingleObject(Buffer.alloc(7), Buffer.alloc(0))).toThrow(/8 bytes.*got 7/);
  });

  it.each([
    ['JSON text', Buffer.from('{"a":1}'), 'bad-magic'],
    ['an empty payload', Buffer.alloc(0), 'truncated'],
    ['the wrong version byte', Buffer.from('c3020102030405060708', 'hex'), 'bad-magic'],
    ['only the first marker byte', Buffer.from('c3', 'hex'), 'truncated'],
    ['a cut-off fingerprint', Buffer.from('c301010203', 'hex'), 'truncated'],
  ])('classifies %s as %s', (_what, payload, code) => {
    expect(codeOf(() => splitSingleObject(payload))).toBe(code);
  });

  it('names what it found in a bad-magic message', () => {
    expect(() => splitSingleObject(Buffer.from('{"a":1}'))).toThrow(
      /starts with 7b 22 61 22 …, expected c3 01/,
    );
  });
});
