import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { describeExport, exportSpaDataset, formatOfPath } from '../../cli/commands/export.js';
import type { SftRow } from '../../schemas/index.js';
import {
  SPA_DATASET_COLUMNS,
  splitTrainVal,
  toSpaDatasetRow,
  valPathBeside,
  withSplit,
} from '../../streams/files/spa-dataset.js';
import { toVerlRow } from '../../streams/files/trainer-datasets.js';
import {
  parseSftRowLine,
  readSftRowsJsonl,
  SftRowLineError,
} from '../../streams/files/spa-dataset-source.js';

const SYSTEM = "You're a helpful assistant. ";
const dir = mkdtempSync(join(tmpdir(), 'spa-export-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** An SftRow as `spa generate` writes it (our provenance fields included); `i` varies the content. */
function sftRow(i: number): SftRow {
  return {
    data_source: i % 2 === 0 ? 'sokoban' : 'frozenlake',
    prompt: [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: `Turn 1:\nState:\n#P_O#\nrow ${i} √\n` },
    ],
    response: `<think> <observation>#P_O# √ ${i}</observation> go <prediction>#_PO#</prediction> </think> <answer>Right</answer>`,
    ability: 'bfs',
    reward_model: "{'ground_truth': {'numbers': array([0, 0]), 'target': 0}, 'style': 'rule'}",
    extra_info: `{'index': ${10000 + i}, 'split': 'train'}`,
    trajectory_id: `run/g0/s${i}`,
    turn: 0,
    env: 'sokoban',
    policy_version: 3,
    annotation: 'gt',
    mask_transitions: false,
  };
}

async function* source(rows: readonly SftRow[]): AsyncIterable<SftRow> {
  yield* rows;
}

const readJsonLines = (path: string): unknown[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as unknown);

describe('SPA dataset row mapping (docs/spa-data.md#columns, #released)', () => {
  it('keeps exactly the six released columns, in SPA order, with prompt messages as {content, role}', () => {
    const row = sftRow(4);
    const line = JSON.stringify(toSpaDatasetRow(row));
    const parsed = JSON.parse(line) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual([...SPA_DATASET_COLUMNS]);
    expect(
      line.startsWith(
        `{"data_source":"sokoban","prompt":[{"content":${JSON.stringify(SYSTEM)},"role":"system"}`,
      ),
    ).toBe(true);
    const prompt = parsed.prompt as Record<string, string>[];
    expect(prompt.map((m) => Object.keys(m))).toEqual([
      ['content', 'role'],
      ['content', 'role'],
    ]);
    expect(prompt).toEqual(row.prompt.map((m) => ({ content: m.content, role: m.role })));
    for (const column of ['data_source', 'response', 'ability', 'reward_model', 'extra_info'] as const) {
      expect(parsed[column]).toBe(row[column]);
    }
  });
});

describe('reading SftRow JSON Lines', () => {
  const file = join(dir, 'rows.jsonl');
  const good = JSON.stringify(sftRow(0));

  it('names the line and the problem for a bad line', () => {
    const cases: [string, RegExp][] = [
      ['{"data_source":', /x\.jsonl:7: not JSON/],
      ['[1, 2]', /x\.jsonl:7: not a JSON object/],
      [JSON.stringify({ ...sftRow(0), response: undefined }), /x\.jsonl:7: .*response is missing/],
      [JSON.stringify({ ...sftRow(0), response: 5 }), /response: got 5, expected "string"/],
      [JSON.stringify({ ...sftRow(0), prompt: [{ role: 'system' }] }), /prompt\.0\.content: got undefined/],
    ];
    for (const [text, message] of cases) {
      expect(() => parseSftRowLine(text, 'x.jsonl', 7)).toThrow(message);
    }
  });

  it('accepts rows without our provenance fields (older writers), since they are not exported', () => {
    const { trajectory_id: _t, annotation: _a, mask_transitions: _m, ...released } = sftRow(1);
    expect(parseSftRowLine(JSON.stringify(released), 'x.jsonl', 1).response).toBe(sftRow(1).response);
  });

  it('skips blank lines, counts them in line numbers, and stops at the first bad line', async () => {
    writeFileSync(file, `${good}\n\n{"oops": true}\n${good}\n`);
    const read: SftRow[] = [];
    const error = await (async () => {
      for await (const row of readSftRowsJsonl(file)) read.push(row);
    })().catch((e: unknown) => e);
    expect(read).toHaveLength(1);
    expect(error).toBeInstanceOf(SftRowLineError);
    expect((error as SftRowLineError).line).toBe(3);
    expect((error as Error).message).toContain(`${file}:3:`);
  });

  it('names a missing input file', async () => {
    const rows = readSftRowsJsonl(join(dir, 'nope.jsonl'));
    await expect(rows[Symbol.asyncIterator]().next()).rejects.toThrow(/nope\.jsonl \(ENOENT\)/);
  });
});

describe('train/val split (like train_test_split(test_size=p, random_state=42))', () => {
  const rows = Array.from({ length: 23 }, (_, i) => i);

  it('puts ceil(p·n) rows in val, the rest in train, each row exactly once', () => {
    const { train, val } = splitTrainVal(rows, 0.2, 42);
    expect(val).toHaveLength(Math.ceil(0.2 * 23));
    expect(train).toHaveLength(23 - val.length);
    expect([...train, ...val].sort((a, b) => a - b)).toEqual(rows);
  });

  it('is a shuffle that depends on the seed and only on the seed', () => {
    const a = splitTrainVal(rows, 0.2, 42);
    expect(splitTrainVal(rows, 0.2, 42)).toEqual(a);
    expect(a.train).not.toEqual(rows.slice(0, a.train.length));
    expect(splitTrainVal(rows, 0.2, 7)).not.toEqual(a);
  });

  it('rejects fractions outside (0, 1) and splits that leave train empty', () => {
    expect(() => splitTrainVal(rows, 0, 42)).toThrow(/in \(0, 1\), got 0/);
    expect(() => splitTrainVal(rows, 1.5, 42)).toThrow(/got 1.5/);
    expect(() => splitTrainVal([1], 0.2, 42)).toThrow(/1 row\(s\).*train half would be empty/);
  });

  it('names the val file like SPA (wm_train → wm_val)', () => {
    expect(valPathBeside('out/wm_train.parquet')).toBe('out/wm_val.parquet');
    expect(valPathBeside('/a/train/sft_train.jsonl')).toBe('/a/train/sft_val.jsonl');
    expect(valPathBeside('data/rows.parquet')).toBe('data/rows.val.parquet');
    expect(valPathBeside('rows')).toBe('rows.val');
  });
});

describe('spa export --format from the extension of --out', () => {
  it('reads .parquet, .jsonl and .json, and names the choices for anything else', () => {
    expect(formatOfPath('out/wm_train.parquet')).toBe('parquet');
    expect(formatOfPath('out/wm_train.PARQUET')).toBe('parquet');
    expect(formatOfPath('rows.jsonl')).toBe('spa-jsonl');
    expect(formatOfPath('rows.json')).toBe('spa-jsonl');
    expect(() => formatOfPath('rows.csv')).toThrow(
      /extension of --out "rows.csv".*\.parquet, \.jsonl or \.json.*--format spa-jsonl \| parquet/,
    );
  });
});

describe('exportSpaDataset (spa-jsonl)', () => {
  const rows = Array.from({ length: 10 }, (_, i) => sftRow(i));

  it('streams every row to one file when no split is asked', async () => {
    const out = join(dir, 'all.jsonl');
    const summary = await exportSpaDataset({ source: source(rows), format: 'spa-jsonl', out });
    expect(summary).toEqual({ out, rows: 10 });
    expect(readJsonLines(out)).toEqual(rows.map(toSpaDatasetRow));
  });

  it('writes train and a wm_val sibling that together hold every row once', async () => {
    const out = join(dir, 'wm_train.jsonl');
    const summary = await exportSpaDataset({
      source: source(rows),
      format: 'spa-jsonl',
      out,
      splitVal: 0.2,
      seed: 42,
    });
    expect(summary).toEqual({ out, rows: 8, val: { out: join(dir, 'wm_val.jsonl'), rows: 2 } });
    const written = [...readJsonLines(out), ...readJsonLines(join(dir, 'wm_val.jsonl'))];
    const byResponse = (a: unknown, b: unknown): number =>
      String((a as SftRow).response).localeCompare(String((b as SftRow).response));
    const rest = (r: unknown) => ({ ...(r as SftRow), extra_info: '' }); // its split: the next test
    expect(written.sort(byResponse).map(rest)).toEqual(rows.map(toSpaDatasetRow).sort(byResponse).map(rest));
  });

  // issue 44: the verl validation file's rows said extra_info.split "train"
  it("each half's rows say their split in extra_info (train, val), in every layout", async () => {
    const out = join(dir, 'split_train.jsonl');
    const summary = await exportSpaDataset({ source: source(rows), format: 'spa-jsonl', out, splitVal: 0.2 });
    const splits = (path: string) =>
      readJsonLines(path).map((r) => /'split': '(\w+)'/.exec((r as SftRow).extra_info)?.[1]);
    expect(splits(out)).toEqual(Array(8).fill('train'));
    expect(splits(summary.val!.out)).toEqual(['val', 'val']);
    expect(readJsonLines(summary.val!.out).map((r) => (r as SftRow).extra_info)).toEqual(
      readJsonLines(summary.val!.out).map(
        (r) => `{'index': ${/\d+/.exec((r as SftRow).extra_info)![0]}, 'split': 'val'}`,
      ),
    );
    expect(toVerlRow(withSplit(sftRow(3), 'val')).extra_info).toEqual({ index: 10003n, split: 'val' });
    expect(describeExport(summary)).toBe(
      `wrote ${out} (8 rows, split train) and ${join(dir, 'split_val.jsonl')} (2 rows, split val)`,
    );
  });

  it('leaves no output file when the input goes bad halfway', async () => {
    const input = join(dir, 'half.jsonl');
    const out = join(dir, 'half-out.jsonl');
    writeFileSync(input, `${JSON.stringify(sftRow(0))}\nnot json\n`);
    await expect(
      exportSpaDataset({ source: readSftRowsJsonl(input), format: 'parquet', out }),
    ).rejects.toThrow(/half\.jsonl:2: not JSON/);
    expect(existsSync(out)).toBe(false);
    expect(existsSync(`${out}.partial-${process.pid}`)).toBe(false);
  });
});
