/**
 * SftRows in the layouts two trainer libraries load directly (`spa export --format verl | trl`,
 * docs/spa-data.md#export), both as Parquet:
 *
 * - **verl**: SPA's six columns (SPA trained with verl, docs/spa-sft.md#settings), but with
 *   `reward_model` and `extra_info` as structs, the dicts verl's RL datasets carry, instead of
 *   the Python-repr strings SPA released: `reward_model` is
 *   struct<ground_truth: struct<numbers: list<int64>, target: int64>, style: string> (SPA's
 *   constant, its NumPy array read as a list) and `extra_info` is struct<index: int64, split: string>.
 * - **trl**: TRL's conversational prompt-completion layout: `prompt` is the list of
 *   `{role, content}` messages before the turn, `completion` the one assistant message that
 *   answers it.
 */
import type { SftRow } from '../../schemas/index.js';
import { parsePythonLiteral, type PythonValue } from './python-literal.js';
import {
  int64,
  messageList,
  parquetList,
  parquetSink,
  parquetStruct,
  parquetTable,
  utf8,
  type ParquetSchema,
} from './spa-dataset-parquet.js';
import { SPA_DATASET_COLUMNS, toSpaDatasetRow, type SpaDatasetSink } from './spa-dataset.js';

/** `reward_model` as verl reads it (SPA's constant: numbers [0, 0], target 0, style "rule"). */
interface VerlRewardModel {
  readonly ground_truth: { readonly numbers: readonly bigint[]; readonly target: bigint };
  readonly style: string;
}

/** `extra_info` as verl reads it: the puzzle seed as `index`, and the split. */
interface VerlExtraInfo {
  readonly index: bigint;
  readonly split: string;
}

/** One verl row: SPA's columns, the last two as structs. */
export interface VerlRow {
  readonly data_source: string;
  readonly prompt: readonly { readonly content: string; readonly role: string }[];
  readonly response: string;
  readonly ability: string;
  readonly reward_model: VerlRewardModel;
  readonly extra_info: VerlExtraInfo;
}

/** SPA's released column names, in SPA's order: only two columns' types differ. */
const VERL_COLUMNS = SPA_DATASET_COLUMNS satisfies readonly (keyof VerlRow)[];

export const VERL_PARQUET_SCHEMA: ParquetSchema = parquetTable(
  utf8('data_source'),
  messageList('prompt', ['content', 'role']),
  utf8('response'),
  utf8('ability'),
  parquetStruct(
    'reward_model',
    parquetStruct('ground_truth', parquetList('numbers', int64('element')), int64('target')),
    utf8('style'),
  ),
  parquetStruct('extra_info', int64('index'), utf8('split')),
);

/** Reads a repr column as a dict, or throws naming the column and what it holds. */
function dictColumn(name: string, text: string): Readonly<Record<string, PythonValue>> {
  let value: PythonValue;
  try {
    value = parsePythonLiteral(text);
  } catch (error) {
    throw new Error(`${name} is not a Python/JSON literal: ${(error as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw new Error(`${name} ${JSON.stringify(text)} is not a dict`);
  return value as Readonly<Record<string, PythonValue>>;
}

function integer(column: string, field: string, value: PythonValue | undefined): bigint {
  if (typeof value !== 'bigint')
    throw new Error(`${column}.${field} must be an integer, got ${String(value)}`);
  return value;
}

function text(column: string, field: string, value: PythonValue | undefined): string {
  if (typeof value !== 'string') throw new Error(`${column}.${field} must be a string, got ${String(value)}`);
  return value;
}

/** An SftRow as a verl row; a `reward_model` or `extra_info` of another shape throws. */
export function toVerlRow(row: SftRow): VerlRow {
  const reward = dictColumn('reward_model', row.reward_model);
  const truth = reward['ground_truth'];
  if (truth === null || typeof truth !== 'object' || Array.isArray(truth))
    throw new Error(`reward_model.ground_truth must be a dict, in ${JSON.stringify(row.reward_model)}`);
  const { numbers, target } = truth as Readonly<Record<string, PythonValue>>;
  if (!Array.isArray(numbers))
    throw new Error(
      `reward_model.ground_truth.numbers must be a list, in ${JSON.stringify(row.reward_model)}`,
    );
  const info = dictColumn('extra_info', row.extra_info);
  return {
    ...toSpaDatasetRow(row),
    reward_model: {
      ground_truth: {
        numbers: (numbers as PythonValue[]).map((n) => integer('reward_model', 'ground_truth.numbers', n)),
        target: integer('reward_model', 'ground_truth.target', target),
      },
      style: text('reward_model', 'style', reward['style']),
    },
    extra_info: {
      index: integer('extra_info', 'index', info['index']),
      split: text('extra_info', 'split', info['split']),
    },
  };
}

/** Writes verl rows to a Parquet file at `path`. */
export function verlParquetSink(path: string): SpaDatasetSink<VerlRow> {
  return parquetSink<VerlRow>(path, VERL_PARQUET_SCHEMA, VERL_COLUMNS);
}

/** A chat message in TRL's key order. */
interface TrlMessage {
  readonly role: string;
  readonly content: string;
}

/** One TRL conversational prompt-completion row. */
export interface TrlRow {
  readonly prompt: readonly TrlMessage[];
  readonly completion: readonly TrlMessage[];
}

const TRL_COLUMNS = ['prompt', 'completion'] as const satisfies readonly (keyof TrlRow)[];

export const TRL_PARQUET_SCHEMA: ParquetSchema = parquetTable(
  messageList('prompt', ['role', 'content']),
  messageList('completion', ['role', 'content']),
);

/** An SftRow as a TRL row: the prompt messages, and the response as the assistant's completion. */
export function toTrlRow(row: SftRow): TrlRow {
  return {
    prompt: row.prompt.map((m) => ({ role: m.role, content: m.content })),
    completion: [{ role: 'assistant', content: row.response }],
  };
}

/** Writes TRL rows to a Parquet file at `path`. */
export function trlParquetSink(path: string): SpaDatasetSink<TrlRow> {
  return parquetSink<TrlRow>(path, TRL_PARQUET_SCHEMA, TRL_COLUMNS);
}
