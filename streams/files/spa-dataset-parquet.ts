/**
 * SPA-format rows as a Parquet file shaped like SPA's `wm_train.parquet` (docs/spa-sft.md#settings,
 * docs/spa-data.md#released):
 * `prompt` is list<struct<content: string, role: string>>, the other five columns are strings.
 *
 * Writer choice: hyparquet-writer. Both maintained pure-JS writers were tried on this schema and
 * read back with pyarrow. hyparquet-writer writes the standard three-level LIST
 * (`prompt.list.element`, the layout pyarrow/pandas write, so the Arrow type is exactly
 * `list<element: struct<content, role>>`) and has one dependency. @dsnp/parquetjs 1.8.9 also
 * round-trips, but pulls in the AWS S3 SDK, thrift, bson and wasm codecs, and its newest
 * release (1.9.3) installs without its `dist/` folder here, so it cannot be imported.
 */
import { fileWriter, ParquetWriter } from 'hyparquet-writer';
import { SPA_DATASET_COLUMNS, type SpaDatasetSink } from './spa-dataset.js';

/** A Parquet schema, or one column's subtree of it: the flattened tree, depth-first. */
export type ParquetSchema = ConstructorParameters<typeof ParquetWriter>[0]['schema'];

/** Rows buffered per row group: bounds memory for big exports (block: the reader waits on us). */
const SPA_PARQUET_ROW_GROUP = 10_000;

// Columns and struct fields are OPTIONAL like the ones pandas/pyarrow write for SPA's DataFrame;
// we never write nulls.

/** A string column or struct field. */
export const utf8 = (name: string): ParquetSchema => [
  { name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
];

/** A 64-bit integer column or struct field (values are bigints). */
export const int64 = (name: string): ParquetSchema => [{ name, type: 'INT64', repetition_type: 'OPTIONAL' }];

/** A struct column or field holding `fields`, each a subtree (a leaf, a list or a struct). */
export const parquetStruct = (name: string, ...fields: ParquetSchema[]): ParquetSchema => [
  { name, repetition_type: 'OPTIONAL', num_children: fields.length },
  ...fields.flat(),
];

/**
 * A list column or field in the standard three-level LIST layout (`<name>.list.element`, the one
 * pyarrow and pandas write, so the Arrow type is `list<element: …>`; Parquet LogicalTypes.md,
 * "Lists"); `element` is the subtree of one item (its root is renamed `element`).
 */
export function parquetList(name: string, element: ParquetSchema): ParquetSchema {
  const [root, ...below] = element;
  return [
    { name, repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
    { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    { ...root!, name: 'element' },
    ...below,
  ];
}

/** A table's schema: the root, then each column's subtree in order. */
export const parquetTable = (...columns: ParquetSchema[]): ParquetSchema => [
  { name: 'schema', num_children: columns.length },
  ...columns.flat(),
];

/** A chat-message list column: `{content, role}` structs in the field order given. */
export const messageList = (name: string, fields: readonly ('content' | 'role')[]): ParquetSchema =>
  parquetList(name, parquetStruct('element', ...fields.map(utf8)));

/** The Parquet schema of SPA's released columns: `prompt` is list<struct<content, role>>. */
export const SPA_PARQUET_SCHEMA: ParquetSchema = parquetTable(
  utf8('data_source'),
  messageList('prompt', ['content', 'role']),
  utf8('response'),
  utf8('ability'),
  utf8('reward_model'),
  utf8('extra_info'),
);

/** Writes SPA's released columns to a Parquet file at `path`; see {@link parquetSink}. */
export function spaParquetSink(path: string, rowGroupSize = SPA_PARQUET_ROW_GROUP): SpaDatasetSink {
  return parquetSink(path, SPA_PARQUET_SCHEMA, SPA_DATASET_COLUMNS, rowGroupSize);
}

/**
 * Writes rows to a Parquet file at `path` with `schema`, whose top-level columns are `columns`
 * (the rows' keys, in order), one row group per `rowGroupSize` rows (snappy, the writer's default
 * codec, as pandas uses). The file is complete only after `close()`.
 */
export function parquetSink<Row extends object>(
  path: string,
  schema: ParquetSchema,
  columns: readonly (keyof Row & string)[],
  rowGroupSize = SPA_PARQUET_ROW_GROUP,
): SpaDatasetSink<Row> {
  const writer = new ParquetWriter({
    writer: fileWriter(path),
    schema,
    createdBy: 'spa export (hyparquet-writer)',
  });
  let pending: Row[] = [];
  const flush = async (): Promise<void> => {
    if (pending.length === 0) return;
    const rows = pending;
    pending = [];
    const columnData = columns.map((name) => ({ name, data: rows.map((row) => row[name]) }));
    await writer.write({ columnData, rowGroupSize: rows.length });
  };
  return {
    async write(row: Row): Promise<void> {
      pending.push(row);
      if (pending.length >= rowGroupSize) await flush();
    },
    async close(): Promise<void> {
      await flush();
      await writer.finish();
    },
  };
}
