import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSchemaVersions, SchemaLoadError } from '../../schemas/index.js';

const record = (name: string, fields: object[] = [{ name: 'a', type: 'int' }]): object => ({
  type: 'record',
  name,
  namespace: 't',
  fields,
});

function schemaDir(files: Record<string, object | string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'spa-schemas-'));
  mkdirSync(join(dir, 'history'));
  for (const [path, content] of Object.entries(files)) {
    writeFileSync(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
  }
  return dir;
}

describe('loadSchemaVersions', () => {
  it('numbers the current schema one past its newest history version', () => {
    const dir = schemaDir({
      'X.avsc': record('X', [
        { name: 'a', type: 'int' },
        { name: 'b', type: 'string', default: '' },
      ]),
      'history/X.v1.avsc': record('X'),
      'Y.avsc': record('Y'),
    });
    expect(loadSchemaVersions(dir).map((v) => `${v.fullName} v${v.version}`)).toEqual([
      't.X v1',
      't.X v2',
      't.Y v1',
    ]);
  });

  it.each([
    [
      'a file named after another record',
      { 'X.avsc': record('Y') },
      /declares record t.Y; the file name says X/,
    ],
    ['invalid JSON', { 'X.avsc': '{"type":' }, /X.avsc: cannot read schema JSON/],
    ['an invalid schema', { 'X.avsc': { type: 'record', name: 'X' } }, /X.avsc: not a valid Avro schema/],
    [
      'a non-record top level',
      { 'X.avsc': { type: 'enum', name: 'X', symbols: ['a'] } },
      /must be a named record, got enum/,
    ],
    [
      'a badly named history file',
      { 'X.avsc': record('X'), 'history/X-old.avsc': record('X') },
      /<Name>.v<N>.avsc/,
    ],
    [
      'history without a current schema',
      { 'X.avsc': record('X'), 'history/Z.v1.avsc': record('Z') },
      /history without a current schema: .*Z.v1.avsc/,
    ],
    [
      'a history copy identical in canonical form',
      { 'X.avsc': { ...record('X'), doc: 'new doc' }, 'history/X.v1.avsc': record('X') },
      /X.v1.avsc has the same canonical form as .*X.avsc/,
    ],
  ])('refuses %s', (_what, files, message) => {
    const dir = schemaDir(files);
    expect(() => loadSchemaVersions(dir)).toThrow(SchemaLoadError);
    expect(() => loadSchemaVersions(dir)).toThrow(message);
  });
});
