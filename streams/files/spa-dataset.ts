/**
 * SPA's released dataset row (`tyzhu/SPA-*-data`, `wm_train.parquet`): the six columns
 * `generate_sft_data.py` writes (docs/spa-data.md#columns, #released), and the seeded train/val split.
 * Readers of these rows live in spa-dataset-source.ts, writers in spa-dataset-jsonl.ts and
 * spa-dataset-parquet.ts.
 */
import { Rng } from '../../envs/rng.js';
import type { SftRow } from '../../schemas/index.js';

/** One prompt message in SPA's released key order: content first, then role (docs/spa-data.md#released). */
interface SpaPromptMessage {
  readonly content: string;
  readonly role: string;
}

/** One row of SPA's released data: exactly these columns, in this order (docs/spa-data.md#columns). */
export interface SpaDatasetRow {
  readonly data_source: string;
  readonly prompt: readonly SpaPromptMessage[];
  readonly response: string;
  readonly ability: string;
  readonly reward_model: string;
  readonly extra_info: string;
}

/** The released column names, in SPA's order. */
export const SPA_DATASET_COLUMNS = [
  'data_source',
  'prompt',
  'response',
  'ability',
  'reward_model',
  'extra_info',
] as const satisfies readonly (keyof SpaDatasetRow)[];

/**
 * An SftRow cut down to SPA's released columns. Our provenance fields (trajectory_id, turn,
 * policy_version, …) are dropped; `prompt` messages are rebuilt as `{content, role}` because
 * key order is visible in JSON and the released data has content first.
 */
export function toSpaDatasetRow(row: SftRow): SpaDatasetRow {
  return {
    data_source: row.data_source,
    prompt: row.prompt.map((m) => ({ content: m.content, role: m.role })),
    response: row.response,
    ability: row.ability,
    reward_model: row.reward_model,
    extra_info: row.extra_info,
  };
}

/** Where dataset rows go (SPA's columns unless told); `close` flushes and finishes the file. */
export interface SpaDatasetSink<Row = SpaDatasetRow> {
  write(row: Row): void | Promise<void>;
  close(): Promise<void>;
}

/** The two halves of a train/validation split. */
export interface TrainValSplit<T> {
  readonly train: T[];
  readonly val: T[];
}

/**
 * A seeded row-level split shaped like SPA's `train_test_split(test_size=p, random_state=42,
 * shuffle=True)` (docs/spa-data.md#columns): shuffle, the first ⌈p·n⌉ rows are validation, the rest
 * train, both in shuffled order. Not sklearn-exact: the permutation comes from our seeded Rng
 * (xoroshiro128+), not NumPy's MT19937, so the same seed picks different rows than SPA did.
 * Turns of one trajectory can land in both halves, as in SPA.
 */
export function splitTrainVal<T>(rows: readonly T[], valFraction: number, seed: number): TrainValSplit<T> {
  if (!(valFraction > 0 && valFraction < 1)) {
    throw new RangeError(`validation fraction must be in (0, 1), got ${valFraction}`);
  }
  // sklearn: n_test = ceil(test_size · n), n_train = n − n_test; an empty train half is an error.
  const valCount = Math.ceil(valFraction * rows.length);
  if (rows.length - valCount < 1) {
    throw new RangeError(
      `cannot split ${rows.length} row(s) with validation fraction ${valFraction}: the train half would be empty`,
    );
  }
  const shuffled = new Rng(seed).shuffle(rows);
  return { val: shuffled.slice(0, valCount), train: shuffled.slice(valCount) };
}

/**
 * `row` as a row of the `split` half: its `extra_info` names that split (`'split': 'val'`), as
 * verl reads it. The rows were played as training puzzles (`'split': 'train'`); a row of the
 * validation file saying "train" would have a reader take it for training data. An `extra_info`
 * without a split is left as it is.
 */
export function withSplit(row: SftRow, split: 'train' | 'val'): SftRow {
  return { ...row, extra_info: row.extra_info.replace(/'split':\s*'[^']*'/, `'split': '${split}'`) };
}

/**
 * The `wm_val`-style sibling of a train file: `wm_train.parquet` → `wm_val.parquet` (the last
 * "train" in the file name becomes "val"); a name without "train" gets `.val` before its extension.
 */
export function valPathBeside(trainPath: string): string {
  const slash = trainPath.lastIndexOf('/') + 1;
  const dir = trainPath.slice(0, slash);
  const name = trainPath.slice(slash);
  const at = name.lastIndexOf('train');
  if (at >= 0) return `${dir}${name.slice(0, at)}val${name.slice(at + 'train'.length)}`;
  const dot = name.lastIndexOf('.');
  return dot > 0 ? `${dir}${name.slice(0, dot)}.val${name.slice(dot)}` : `${dir}${name}.val`;
}
