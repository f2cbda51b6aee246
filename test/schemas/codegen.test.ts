import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GENERATED_TYPES_FILE, generateTypes } from '../../schemas/codegen.js';

function schemaFiles(schemas: Record<string, object>): string[] {
  const dir = mkdtempSync(join(tmpdir(), 'spa-codegen-'));
  return Object.entries(schemas).map(([name, schema]) => {
    const file = join(dir, `${name}.avsc`);
    writeFileSync(file, JSON.stringify(schema));
    return file;
  });
}

describe('schemas/codegen', () => {
  it('schemas/generated/types.ts is up to date (run `npm run schemas:types`)', async () => {
    expect(readFileSync(GENERATED_TYPES_FILE, 'utf8')).toBe(await generateTypes());
  });

  it('maps Avro types to TypeScript and keeps docs and defaults', async () => {
    const [file] = schemaFiles({
      R: {
        type: 'record',
        name: 'R',
        namespace: 'n',
        doc: 'A record.',
        fields: [
          { name: 'a', type: ['null', 'string'], default: null, doc: 'maybe text' },
          { name: 'b', type: { type: 'array', items: { type: 'enum', name: 'E', symbols: ['x', 'y'] } } },
          { name: 'c', type: { type: 'map', values: 'bytes' } },
          { name: 'd', type: { type: 'long', logicalType: 'timestamp-millis' } },
        ],
      },
    });
    const text = await generateTypes([file as string]);
    expect(text).toContain(
      '/** maybe text Default when absent from the writer: `null`. */\n  readonly a: null | string;',
    );
    expect(text).toContain("export type E = 'x' | 'y';");
    expect(text).toContain('readonly b: readonly E[];');
    expect(text).toContain('readonly c: Readonly<Record<string, Buffer>>;');
    expect(text).toContain('readonly d: number;');
    expect(text).toContain('export interface SpaRecordTypes {\n  R: R;\n}');
  });

  it('refuses one named type defined two different ways', async () => {
    const message = (doc: string): object => ({
      type: 'record',
      name: 'M',
      namespace: 'n',
      fields: [{ name: 'x', type: 'string', doc }],
    });
    const files = schemaFiles({
      A: { type: 'record', name: 'A', namespace: 'n', fields: [{ name: 'm', type: message('one') }] },
      B: { type: 'record', name: 'B', namespace: 'n', fields: [{ name: 'm', type: message('two') }] },
    });
    await expect(generateTypes(files)).rejects.toThrow('n.M is defined differently in A.avsc and B.avsc');
  });
});
