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
import { SPA_DATASET_COLUMNS, type SpaDatasetRow, type SpaDatasetSink } from './spa-dataset.js';

type ParquetSchema = ConstructorParameters<typeof ParquetWriter>[0]['schema'];

/** Rows buffered per row group: bounds memory for big exports (block: the reader waits on us). */
export const SPA_PARQUET_ROW_GROUP = 10_000;

const utf8 = (name: string): ParquetSchema[number] => ({
  name,
  type: 'BYTE_ARRAY',
  converted_type: 'UTF8',
  // OPTIONAL like the columns pandas/pyarrow write for SPA's DataFrame; we never write nulls.
  repetition_type: 'OPTIONAL',
});

/** The Parquet schema (flattened tree, depth-first) of SPA's released columns. */
export const SPA_PARQUET_SCHEMA: ParquetSchema = [
  { name: 'schema', num_children: SPA_DATASET_COLUMNS.length },
  utf8('data_source'),
  // Standard three-level LIST of a two-field struct (Parquet LogicalTypes.md, "Lists").
  { name: 'prompt', repetition_type: 'OPTIONAL', converted_type: 'LIST', num_children: 1 },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', repetition_type: 'OPTIONAL', num_children: 2 },
  utf8('content'),
  utf8('role'),
  utf8('response'),
  utf8('ability'),
  utf8('reward_model'),
  utf8('extra_info'),
];

/**
 * Writes rows to a Parquet file at `path`, one row group per `rowGroupSize` rows (snappy, the
 * writer's default codec, as pandas uses). The file is complete only after `close()`.
 */
export function spaParquetSink(path: string, rowGroupSize = SPA_PARQUET_ROW_GROUP): SpaDatasetSink {
  const writer = new ParquetWriter({
    writer: fileWriter(path),
    schema: SPA_PARQUET_SCHEMA,
    createdBy: 'spa export (hyparquet-writer)',
  });
  let pending: SpaDatasetRow[] = [];
  const flush = async (): Promise<void> => {
    if (pending.length === 0) return;
    const rows = pending;
    pending = [];
    const columnData = SPA_DATASET_COLUMNS.map((name) => ({ name, data: rows.map((row) => row[name]) }));
    await writer.write({ columnData, rowGroupSize: rows.length });
  };
  return {
    async write(row: SpaDatasetRow): Promise<void> {
      pending.push(row);
      if (pending.length >= rowGroupSize) await flush();
    },
    async close(): Promise<void> {
      await flush();
      await writer.finish();
    },
  };
}
