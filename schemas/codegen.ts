/**
 * Generates schemas/generated/types.ts (TypeScript types of every current record) from
 * schemas/*.avsc. Run `npm run schemas:types` after editing a schema; a unit test fails while
 * the committed file is out of date.
 *
 * Hand-written rather than @ovotech/avro-ts because that package pins TypeScript 4 and our
 * schemas use a small subset of Avro (records, enums, fixed, arrays, maps, null unions).
 */
import { writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { format, resolveConfig } from 'prettier';
import { SCHEMA_DIR, currentSchemaFiles, readSchemaFile } from './load.js';

/** Where the generated module is written. */
export const GENERATED_TYPES_FILE: string = join(SCHEMA_DIR, 'generated', 'types.ts');

const PRIMITIVES: Readonly<Record<string, string>> = {
  null: 'null',
  boolean: 'boolean',
  int: 'number',
  long: 'number',
  float: 'number',
  double: 'number',
  bytes: 'Buffer',
  string: 'string',
};

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** Collects one declaration per named type; a second, different definition is an error. */
class Declarations {
  readonly #byName = new Map<string, { source: string; text: string }>();

  add(fullName: string, text: string, source: string): void {
    const existing = this.#byName.get(fullName);
    if (existing && existing.text !== text) {
      throw new Error(`${fullName} is defined differently in ${existing.source} and ${source}`);
    }
    if (!existing) this.#byName.set(fullName, { source, text });
  }

  render(): string {
    return [...this.#byName.values()].map((d) => d.text).join('\n\n');
  }
}

/** Walks one schema file, emitting declarations and returning TypeScript type expressions. */
class SchemaWalker {
  constructor(
    private readonly declarations: Declarations,
    private readonly source: string,
  ) {}

  typeOf(schema: Json, namespace: string): string {
    if (typeof schema === 'string') return PRIMITIVES[schema] ?? shortName(schema);
    if (Array.isArray(schema)) return schema.map((s) => this.typeOf(s, namespace)).join(' | ');
    if (schema === null || typeof schema !== 'object') {
      throw new Error(`${this.source}: unsupported schema ${JSON.stringify(schema)}`);
    }
    return this.complexType(schema, namespace);
  }

  private complexType(schema: JsonObject, namespace: string): string {
    const kind = String(schema.type);
    const ns = typeof schema.namespace === 'string' ? schema.namespace : namespace;
    switch (kind) {
      case 'record':
        return this.record(schema, ns);
      case 'enum': {
        const symbols = (schema.symbols as string[]).map((s) => JSON.stringify(s)).join(' | ');
        return this.declare(schema, ns, `export type ${String(schema.name)} = ${symbols};`);
      }
      case 'fixed':
        return this.declare(schema, ns, `export type ${String(schema.name)} = Buffer;`);
      case 'array':
        return `readonly (${this.typeOf(schema.items as Json, ns)})[]`;
      case 'map':
        return `Readonly<Record<string, ${this.typeOf(schema.values as Json, ns)}>>`;
      default:
        if (kind in PRIMITIVES) return PRIMITIVES[kind] as string; // e.g. long + logicalType
        throw new Error(`${this.source}: unsupported Avro type ${kind}`);
    }
  }

  private record(schema: JsonObject, namespace: string): string {
    const fields = (schema.fields as JsonObject[]).map((field) => {
      const doc = docComment(field.doc, fieldNote(field));
      return `${doc}readonly ${String(field.name)}: ${this.typeOf(field.type as Json, namespace)};`;
    });
    const body = `export interface ${String(schema.name)} {\n${fields.join('\n')}\n}`;
    return this.declare(schema, namespace, body);
  }

  private declare(schema: JsonObject, namespace: string, body: string): string {
    const name = String(schema.name);
    const fullName = name.includes('.') ? name : `${namespace}.${name}`;
    this.declarations.add(fullName, `${docComment(schema.doc, `Avro \`${fullName}\`.`)}${body}`, this.source);
    return shortName(name);
  }
}

function shortName(name: string): string {
  return name.slice(name.lastIndexOf('.') + 1);
}

function fieldNote(field: JsonObject): string {
  const type = field.type;
  const logical =
    typeof type === 'object' && type !== null && !Array.isArray(type) ? type.logicalType : undefined;
  const notes = [];
  if (logical !== undefined) notes.push(`Avro logical type \`${String(logical)}\`.`);
  if ('default' in field)
    notes.push(`Default when absent from the writer: \`${JSON.stringify(field.default)}\`.`);
  return notes.join(' ');
}

function docComment(doc: Json | undefined, note: string): string {
  const text = [typeof doc === 'string' ? doc : '', note].filter(Boolean).join(' ');
  return text ? `/** ${text.replaceAll('*/', '*\\/')} */\n` : '';
}

/** The generated module's text for the given schema files (prettier-formatted). */
export async function generateTypes(files: readonly string[] = currentSchemaFiles()): Promise<string> {
  const declarations = new Declarations();
  const records: string[] = [];
  for (const file of files) {
    const schema = readSchemaFile(file) as Json;
    const name = new SchemaWalker(declarations, basename(file)).typeOf(schema, '');
    records.push(`${name}: ${name};`);
  }
  const text = [
    '// Generated by schemas/codegen.ts from schemas/*.avsc. Do not edit: run `npm run schemas:types`.',
    '',
    declarations.render(),
    '',
    '/** Every record with its own .avsc file, by record name (the registry key). */',
    `export interface SpaRecordTypes {\n${records.join('\n')}\n}`,
    '',
    '/** The name of a top-level record: Trajectory, SftRow, Rollout, Rejected, PolicyUpdate. */',
    'export type SpaRecordName = keyof SpaRecordTypes;',
    '',
  ].join('\n');
  const options = await resolveConfig(GENERATED_TYPES_FILE);
  return format(text, { ...options, parser: 'typescript' });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  writeFileSync(GENERATED_TYPES_FILE, await generateTypes());
  console.error(`[schemas] wrote ${GENERATED_TYPES_FILE}`);
}
