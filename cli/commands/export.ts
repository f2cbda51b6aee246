import { rename, rm } from 'node:fs/promises';
import type { Command } from 'commander';
import type { SftRow } from '../../schemas/index.js';
import { readSftRowsJsonl, type SftRowSource } from '../../streams/files/spa-dataset-source.js';
import { spaJsonlSink } from '../../streams/files/spa-dataset-jsonl.js';
import { spaParquetSink } from '../../streams/files/spa-dataset-parquet.js';
import {
  splitTrainVal,
  toSpaDatasetRow,
  valPathBeside,
  withSplit,
  type SpaDatasetSink,
} from '../../streams/files/spa-dataset.js';
import {
  toTrlRow,
  toVerlRow,
  trlParquetSink,
  verlParquetSink,
} from '../../streams/files/trainer-datasets.js';
import { numberInRange, oneOf, seedNumber, UsageError } from '../options.js';
import { checkOutputFile } from '../output-paths.js';
import { brokerTopics, pickRun, runIdArgument, runTopic } from '../run-topics.js';
import { Progress } from '../../loop/progress.js';
import { COMMAND_SUMMARIES } from './summaries.js';
import { connectSpaKafka } from '../../streams/kafka/spa-kafka.js';
import { readSftRowsOfTopic } from '../../streams/kafka/topic-sft-rows.js';

/** Output formats of `spa export`. */
const EXPORT_FORMATS = ['spa-jsonl', 'parquet', 'verl', 'trl'] as const;
/**
 * `spa-jsonl`: SPA's columns as JSON Lines; `parquet`: SPA's `wm_train.parquet` layout; `verl`:
 * SPA's columns as Parquet with `reward_model` and `extra_info` as structs; `trl`: TRL's
 * conversational prompt-completion layout as Parquet (streams/files/trainer-datasets.ts).
 */
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** How one format turns an SftRow into its row and where it writes rows. */
interface Layout<Row> {
  readonly toRow: (row: SftRow) => Row;
  readonly open: (path: string) => SpaDatasetSink<Row>;
}

const layout = <Row>(toRow: (row: SftRow) => Row, open: (path: string) => SpaDatasetSink<Row>) =>
  ({ toRow, open }) as Layout<unknown>;

const LAYOUTS: Readonly<Record<ExportFormat, Layout<unknown>>> = {
  'spa-jsonl': layout(toSpaDatasetRow, (path) => spaJsonlSink(path)),
  parquet: layout(toSpaDatasetRow, (path) => spaParquetSink(path)),
  verl: layout(toVerlRow, verlParquetSink),
  trl: layout(toTrlRow, trlParquetSink),
};

/** What to export and where. */
export interface ExportRequest {
  readonly source: SftRowSource;
  readonly format: ExportFormat;
  readonly out: string;
  /** Fraction of rows for the validation file; absent = no split, every row goes to `out`. */
  readonly splitVal?: number;
  /** Shuffle seed of the split (SPA: random_state=42). */
  readonly seed?: number;
  /** Validation file; default the `wm_val`-style sibling of `out`. */
  readonly valOut?: string;
}

/** Files written and their row counts. */
export interface ExportSummary {
  readonly out: string;
  readonly rows: number;
  readonly val?: { readonly out: string; readonly rows: number };
}

/**
 * Exports SftRows as SPA's released columns, or verl's or TRL's layout. Without a split rows
 * stream straight through (a row group or a write buffer at a time); with `splitVal` every row is
 * held once for the shuffle, as SPA's `train_test_split` holds its DataFrame. Each file is written
 * beside its final name and renamed when complete, so a bad input line leaves no half-written
 * output behind.
 */
export async function exportSpaDataset(request: ExportRequest): Promise<ExportSummary> {
  const { toRow } = LAYOUTS[request.format];
  if (request.splitVal === undefined) {
    const rows = await writeFile(request.format, request.out, mapRows(request.source, toRow));
    return { out: request.out, rows };
  }
  const valOut = validationPath(request.out, request.valOut);
  const all: SftRow[] = [];
  for await (const row of request.source) all.push(row);
  const { train, val } = splitTrainVal(all, request.splitVal, request.seed ?? 42);
  // each half's rows say which half they are in (extra_info.split)
  await writeFile(
    request.format,
    request.out,
    train.map((row) => toRow(withSplit(row, 'train'))),
  );
  await writeFile(
    request.format,
    valOut,
    val.map((row) => toRow(withSplit(row, 'val'))),
  );
  return { out: request.out, rows: train.length, val: { out: valOut, rows: val.length } };
}

/** The validation file: `valOut`, else the `wm_val`-style sibling of `out`; never `out` itself. */
function validationPath(out: string, valOut: string | undefined): string {
  const path = valOut ?? valPathBeside(out);
  if (path === out) throw new UsageError(`validation file ${path} is the train file; pass --val-out <file>`);
  return path;
}

async function* mapRows<Row>(source: SftRowSource, toRow: (row: SftRow) => Row): AsyncIterable<Row> {
  for await (const row of source) yield toRow(row);
}

/** Writes rows to `path` via a temporary file renamed at the end; returns the row count. */
async function writeFile(
  format: ExportFormat,
  path: string,
  rows: AsyncIterable<unknown> | Iterable<unknown>,
): Promise<number> {
  const partial = `${path}.partial-${process.pid}`;
  const sink = LAYOUTS[format].open(partial);
  let count = 0;
  try {
    for await (const row of rows) {
      await sink.write(row);
      count++;
    }
    await sink.close();
    await rename(partial, path);
  } catch (error) {
    await sink.close().catch(() => undefined);
    await rm(partial, { force: true });
    throw error;
  }
  return count;
}

/** What an export wrote, for its last line: each file with its rows and split. */
export function describeExport(summary: ExportSummary): string {
  const rows = (n: number) => `${n.toLocaleString('en-US')} row${n === 1 ? '' : 's'}`;
  if (!summary.val) return `wrote ${summary.out} (${rows(summary.rows)})`;
  return `wrote ${summary.out} (${rows(summary.rows)}, split train) and ${summary.val.out} (${rows(summary.val.rows)}, split val)`;
}

/** The SftRows of run `run`'s SFT topic (`last`: the newest run on the broker); starts no broker. */
async function runSftRows(run: string, onRow: () => void): Promise<SftRowSource> {
  const kafka = await connectSpaKafka({ clientId: 'spa-export', readOnly: true });
  try {
    const picked = pickRun(await brokerTopics(kafka), run, 'runs');
    const topic = runTopic(picked, 'sft', '--run');
    const rows = await readSftRowsOfTopic(kafka, topic, onRow);
    console.error(`[export] read ${rows.length} SftRows from ${topic}`);
    return (async function* () {
      yield* rows;
    })();
  } finally {
    await kafka.close();
  }
}

/** `--format` when not given: from the output file's extension (`.parquet`, `.jsonl`/`.json`). */
export function formatOfPath(path: string): ExportFormat {
  if (/\.parquet$/i.test(path)) return 'parquet';
  if (/\.jsonl?$/i.test(path)) return 'spa-jsonl';
  throw new UsageError(
    `--format not given and the extension of --out "${path}" does not say it: use .parquet, .jsonl or .json, ` +
      `or give --format ${EXPORT_FORMATS.join(' | ')}`,
  );
}

interface ExportOptions {
  in?: string;
  run?: string;
  format?: ExportFormat;
  out: string;
  splitVal?: number;
  seed: number;
  valOut?: string;
}

/** `spa export`: SftRow JSON Lines or a run's SFT topic → SPA's released dataset columns (JSON Lines or Parquet), verl or TRL Parquet. */
export function registerExportCommand(program: Command): void {
  program
    .command('export')
    .description(COMMAND_SUMMARIES.export)
    .option('--in <sft.jsonl>', 'SftRow JSON Lines, as written by `spa generate --out`')
    .option(
      '--run <id>',
      "a `spa run`'s SFT topic (spa.<id>.sft; last: the newest run) instead of --in",
      runIdArgument,
    )
    .option(
      '--format <format>',
      `${EXPORT_FORMATS.join(' | ')}: SPA's columns as JSON Lines or Parquet, verl's Parquet (reward_model and ` +
        `extra_info as structs), TRL's conversational prompt/completion Parquet (default: from the extension of --out)`,
      oneOf('--format', EXPORT_FORMATS),
    )
    .requiredOption('--out <file>', 'output file (the train half when --split-val is given)')
    .option(
      '--split-val <p>',
      'also write a validation file with this fraction of rows (SPA: 0.2)',
      numberInRange('--split-val', { min: 0, max: 1, above: true, below: true }),
    )
    .option('--seed <n>', 'shuffle seed of --split-val (SPA: 42)', seedNumber('--seed'), 42)
    .option('--val-out <file>', 'validation file (default: <out> with "train" → "val", e.g. wm_val.parquet)')
    .action(async (options: ExportOptions) => {
      // Usage errors first, before a row is read.
      if ((options.in === undefined) === (options.run === undefined))
        throw new UsageError('spa export needs --in <sft.jsonl> or --run <id> (one of them)');
      const format = options.format ?? formatOfPath(options.out);
      checkOutputFile('--out', options.out);
      if (options.splitVal !== undefined)
        checkOutputFile(
          options.valOut === undefined ? '--out (its validation file)' : '--val-out',
          validationPath(options.out, options.valOut),
        );
      const progress = new Progress('export');
      // A --run that is not on the broker is a usage error (exit 2), raised before the try.
      const source = options.run
        ? await runSftRows(options.run, () => progress.add('rows'))
        : readSftRowsJsonl(options.in!, () => progress.add('lines'));
      try {
        const summary = await exportSpaDataset({ ...options, format, source });
        progress.done();
        console.error(`[export] ${describeExport(summary)}`);
        console.log(JSON.stringify(summary));
      } catch (error) {
        // Bad input (a line, the file, the split size): one clear line, no stack trace.
        console.error(`spa export: ${(error as Error).message}`);
        process.exitCode = 1;
      }
    });
}
