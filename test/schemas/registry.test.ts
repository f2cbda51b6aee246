import { describe, expect, it } from 'vitest';
import {
  compileSchemaVersion,
  FrameDecodeError,
  frameSingleObject,
  RecordEncodeError,
  SchemaRegistry,
  spaSchemas,
} from '../../schemas/index.js';
import type { SftRow, SpaRecordName, SpaRecordTypes } from '../../schemas/index.js';
import { GOLDEN_SAMPLES, V1_ADDITIONS } from '../fixtures/avro/samples.js';

const registry = spaSchemas();
const sample = <N extends SpaRecordName>(name: N): SpaRecordTypes[N] =>
  GOLDEN_SAMPLES[`${name}.v1`] as SpaRecordTypes[N];

function decodeError(fn: () => unknown): FrameDecodeError {
  try {
    fn();
  } catch (error) {
    if (error instanceof FrameDecodeError) return error;
    throw error;
  }
  throw new Error('expected a FrameDecodeError');
}

describe('SchemaRegistry over the project schemas', () => {
  const names: SpaRecordName[] = ['Trajectory', 'SftRow', 'Rollout', 'Rejected', 'PolicyUpdate'];

  it.each(names)('round-trips a %s through a single-object frame', (name) => {
    const frame = registry.encode(name, sample(name));
    expect(frame.subarray(0, 2).toString('hex')).toBe('c301');
    expect(frame.subarray(2, 10).equals(registry.current(name).fingerprint)).toBe(true);
    expect(registry.decode(name, frame)).toEqual(sample(name));
  });

  it('frames a record as avsc toBuffer does, past the scratch size too, each frame its own copy', () => {
    const expected = (record: SftRow): Buffer =>
      frameSingleObject(
        registry.current('SftRow').fingerprint,
        registry.current('SftRow').type.toBuffer(record),
      );
    const small = sample('SftRow');
    const large = { ...small, response: 'x'.repeat(200_000) };
    const first = registry.encode('SftRow', small);
    const copy = Buffer.from(first);
    for (const record of [large, small, large])
      expect(registry.encode('SftRow', record).equals(expected(record))).toBe(true);
    expect(first.equals(copy)).toBe(true);
  });

  it('knows every record under the spa.v1 namespace', () => {
    expect(names.map((n) => registry.current(n).fullName)).toEqual(names.map((n) => `spa.v1.${n}`));
  });

  it('keeps SftRow v0 in history and reads its frames with v1 defaults', () => {
    expect(registry.versions('SftRow').map((v) => v.version)).toEqual([0, 1]);
    const [v0] = registry.versions('SftRow');
    const old = Object.fromEntries(
      Object.entries(sample('SftRow')).filter(([f]) => !V1_ADDITIONS.includes(f)),
    );
    const frame = frameSingleObject(
      v0?.fingerprint ?? Buffer.alloc(8),
      v0?.type.toBuffer(old) ?? Buffer.alloc(0),
    );
    const row: SftRow = registry.decode('SftRow', frame);
    expect(row).toEqual({ ...old, annotation: 'gt', mask_transitions: false });
  });

  it('rejects an unknown fingerprint and reports it', () => {
    const frame = frameSingleObject(Buffer.from('0102030405060708', 'hex'), Buffer.alloc(4));
    const error = decodeError(() => registry.decode('SftRow', frame));
    expect(error.code).toBe('unknown-fingerprint');
    expect(error.fingerprint?.toString('hex')).toBe('0102030405060708');
    expect(error.message).toMatch(/no known schema has fingerprint 0102030405060708; known: .*SftRow v1/);
  });

  it('rejects a frame of another record', () => {
    const frame = registry.encode('PolicyUpdate', sample('PolicyUpdate'));
    const error = decodeError(() => registry.decode('Rollout', frame));
    expect(error.code).toBe('wrong-record');
    expect(error.message).toBe('frame holds spa.v1.PolicyUpdate v1, expected spa.v1.Rollout');
  });

  it('rejects a truncated body', () => {
    const frame = registry.encode('Rollout', sample('Rollout'));
    const error = decodeError(() => registry.decode('Rollout', frame.subarray(0, frame.length - 3)));
    expect(error.code).toBe('truncated');
    expect(error.fingerprint?.equals(registry.current('Rollout').fingerprint)).toBe(true);
  });

  it('rejects bytes after the record', () => {
    const frame = Buffer.concat([registry.encode('Rollout', sample('Rollout')), Buffer.from([0])]);
    expect(decodeError(() => registry.decode('Rollout', frame)).code).toBe('trailing-bytes');
  });

  it('rejects a body that is not the writer schema', () => {
    // Rejected starts with a ["null","string"] union: branch index 5 (zigzag 0x0a) does not exist.
    const body = Buffer.from([0x0a, 0x00]);
    const frame = frameSingleObject(registry.current('Rejected').fingerprint, body);
    expect(decodeError(() => registry.decode('Rejected', frame)).code).toBe('bad-body');
  });

  it('rejects bad magic before looking at anything else', () => {
    expect(decodeError(() => registry.decode('SftRow', Buffer.from('{"x":1}'))).code).toBe('bad-magic');
  });

  it('names every bad field when a record does not match its schema', () => {
    const bad = {
      ...sample('PolicyUpdate'),
      stage: 'rlhf',
      step: 'three',
    } as unknown as SpaRecordTypes['PolicyUpdate'];
    let error: unknown;
    try {
      registry.encode('PolicyUpdate', bad);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(RecordEncodeError);
    const problems = (error as RecordEncodeError).problems;
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^stage: got "rlhf", expected .*"symbols":\["init","sft","ppo"\]/);
    expect(problems[1]).toBe('step: got "three", expected "long"');
  });

  it('reports incompatible writer and reader versions', () => {
    const reader = compileSchemaVersion(
      { type: 'record', name: 'X', namespace: 't', fields: [{ name: 'a', type: 'string' }] },
      2,
      'reader',
    );
    const writer = compileSchemaVersion(
      { type: 'record', name: 'X', namespace: 't', fields: [{ name: 'a', type: 'boolean' }] },
      1,
      'writer',
    );
    const local = new SchemaRegistry<{ X: { a: string } }>([writer, reader]);
    const frame = frameSingleObject(writer.fingerprint, writer.type.toBuffer({ a: true }));
    expect(decodeError(() => local.decode('X', frame)).code).toBe('incompatible-schema');
  });

  it('refuses two versions with one canonical form', () => {
    const schema = { type: 'record', name: 'X', fields: [{ name: 'a', type: 'int' }] };
    const one = compileSchemaVersion(schema, 1, 'one');
    const two = compileSchemaVersion({ ...schema, doc: 'only a doc changed' }, 2, 'two');
    expect(() => new SchemaRegistry([one, two])).toThrow(/already registered by one/);
  });
});
