/**
 * `spa export --format parquet | verl | trl` read back by the libraries SPA-style trainers use:
 * pyarrow and Hugging Face `datasets` (`load_dataset("parquet", …)`), in the trainer's venv
 * (docs/spa-sft.md#settings, docs/spa-data.md#released, docs/spa-data.md#export).
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SftRow } from '../../schemas/index.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const python = join(repoRoot, 'trainer', '.venv', 'bin', 'python');
const dir = mkdtempSync(join(tmpdir(), 'spa-export-slow-'));
const sft = join(dir, 'sft.jsonl');

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}): string {
  const r = spawnSync(cmd, args, {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 300_000,
    env: { ...process.env, ...env },
  });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}):\n${r.stderr}`);
  return r.stdout;
}

const spa = (...args: string[]): string => run(process.execPath, ['bin/spa.mjs', ...args]);

/** Reads Parquet files with pyarrow and datasets; prints what the test compares, as JSON. */
const READ_BACK = `
import json, sys
import pyarrow.parquet as pq
import datasets
out = {}
for path in sys.argv[1:]:
    table = pq.read_table(path)
    ds = datasets.load_dataset("parquet", data_files=path, split="train")
    out[path] = {
        "num_rows": table.num_rows,
        "columns": table.column_names,
        "prompt_type": str(table.schema.field("prompt").type),
        "ds_rows": len(ds),
        "ds_columns": ds.column_names,
        "ds_prompt0": ds[0]["prompt"][0],
        "ds_prompts": [[[m["content"], m["role"]] for m in p] for p in ds["prompt"]],
        "responses_hex": [r.encode("utf-8").hex() for r in table.column("response").to_pylist()],
        "ds_responses_hex": [r.encode("utf-8").hex() for r in ds["response"]],
        "extra_info": table.column("extra_info").to_pylist(),
    }
print(json.dumps(out))
`;

interface ReadBack {
  num_rows: number;
  columns: string[];
  prompt_type: string;
  ds_rows: number;
  ds_columns: string[];
  ds_prompt0: unknown;
  ds_prompts: [string, string][][];
  responses_hex: string[];
  ds_responses_hex: string[];
  extra_info: string[];
}

/** `datasets` with its caches in the test's folder and no network. */
function hfOffline(): NodeJS.ProcessEnv {
  const hfHome = join(dir, 'hf');
  return {
    HF_HOME: hfHome,
    HF_DATASETS_CACHE: join(hfHome, 'datasets'),
    HF_HUB_OFFLINE: '1',
    HF_DATASETS_OFFLINE: '1',
  };
}

function readBack(...paths: string[]): Record<string, ReadBack> {
  return JSON.parse(run(python, ['-c', READ_BACK, ...paths], hfOffline())) as Record<string, ReadBack>;
}

/**
 * Loads one Parquet file with `datasets` and prints its features, the Python type of each
 * column's first value, every row, and whether each row has the shape TRL's conversational
 * check looks for (`prompt`/`completion` lists of dicts holding `role` and `content`).
 */
const LOAD_FEATURES = `
import json, sys
import datasets
ds = datasets.load_dataset("parquet", data_files=sys.argv[1], split="train")
def messages(value):
    return isinstance(value, list) and len(value) > 0 and all(isinstance(m, dict) and set(m) == {"role", "content"} for m in value)
print(json.dumps({
    "num_rows": len(ds),
    "columns": ds.column_names,
    "features": {name: str(feature) for name, feature in ds.features.items()},
    "python_types": {name: type(ds[0][name]).__name__ for name in ds.column_names},
    "first": ds[0],
    "rows": ds.to_list(),
    "conversational": all(messages(r.get("prompt")) and messages(r.get("completion")) for r in ds),
}))
`;

interface Loaded {
  num_rows: number;
  columns: string[];
  features: Record<string, string>;
  python_types: Record<string, string>;
  first: Record<string, unknown>;
  rows: Record<string, unknown>[];
  conversational: boolean;
}

function loadFeatures(path: string): Loaded {
  return JSON.parse(run(python, ['-c', LOAD_FEATURES, path], hfOffline())) as Loaded;
}

const COLUMNS = ['data_source', 'prompt', 'response', 'ability', 'reward_model', 'extra_info'];
const hex = (text: string): string => Buffer.from(text, 'utf8').toString('hex');
let input: SftRow[] = [];

beforeAll(() => {
  // The venv is provisioned by scripts/setup-python.mjs (idempotent); run it if pyarrow is missing.
  const probe = spawnSync(python, ['-c', 'import pyarrow, datasets'], { encoding: 'utf8' });
  if (probe.status !== 0) run(process.execPath, ['scripts/setup-python.mjs']);
  spa(
    'generate',
    ...['--env', 'sokoban', '--policy', 'random', '--groups', '2', '--group-size', '2', '--batches', '1'],
    ...['--out', sft],
  );
  const generated = readFileSync(sft, 'utf8').trim().split('\n');
  // One extra row with non-ASCII text (a 3-byte √ and a 4-byte 🧊) to check the bytes survive.
  const first = JSON.parse(generated[0] ?? '') as SftRow;
  appendFileSync(sft, JSON.stringify({ ...first, response: `${first.response} √ 🧊`, turn: 99 }) + '\n');
  input = readFileSync(sft, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as SftRow);
}, 600_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('spa export → pyarrow and datasets', () => {
  it('parquet: SPA columns, prompt as list<struct<content, role>>, rows and bytes round-trip', () => {
    const out = join(dir, 'wm_all.parquet');
    expect(JSON.parse(spa('export', '--in', sft, '--format', 'parquet', '--out', out))).toEqual({
      out,
      rows: input.length,
    });
    const got = readBack(out)[out];
    expect(got).toBeDefined();
    if (!got) return;
    expect(input.length).toBeGreaterThan(4);
    expect(got.num_rows).toBe(input.length);
    expect(got.ds_rows).toBe(input.length);
    expect(got.columns).toEqual(COLUMNS);
    expect(got.ds_columns).toEqual(COLUMNS);
    expect(got.prompt_type).toBe('list<element: struct<content: string, role: string>>');
    expect(got.ds_prompt0).toEqual({ content: "You're a helpful assistant. ", role: 'system' });
    expect(got.responses_hex).toEqual(input.map((r) => hex(r.response)));
    expect(got.ds_responses_hex).toEqual(input.map((r) => hex(r.response)));
    expect(got.responses_hex.at(-1)).toContain(hex('√ 🧊'));
    expect(got.ds_prompts).toEqual(input.map((r) => r.prompt.map((m) => [m.content, m.role])));
    expect(got.extra_info).toEqual(input.map((r) => r.extra_info));
  });

  it('parquet with --split-val 0.2: wm_train + wm_val hold every row once', () => {
    const train = join(dir, 'wm_train.parquet');
    const val = join(dir, 'wm_val.parquet');
    const summary = JSON.parse(
      spa('export', '--in', sft, '--format', 'parquet', '--out', train, '--split-val', '0.2', '--seed', '42'),
    ) as { rows: number; val: { out: string; rows: number } };
    const valRows = Math.ceil(0.2 * input.length);
    expect(summary).toEqual({ out: train, rows: input.length - valRows, val: { out: val, rows: valRows } });
    const got = readBack(train, val);
    expect(got[train]?.ds_rows).toBe(input.length - valRows);
    expect(got[val]?.ds_rows).toBe(valRows);
    const both = [...(got[train]?.responses_hex ?? []), ...(got[val]?.responses_hex ?? [])];
    expect(both.sort()).toEqual(input.map((r) => hex(r.response)).sort());
  });

  it('spa-jsonl: one object per line with exactly the SPA columns, prompt keys content then role', () => {
    const out = join(dir, 'wm_all.jsonl');
    spa('export', '--in', sft, '--format', 'spa-jsonl', '--out', out);
    const lines = readFileSync(out, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(input.length);
    lines.forEach((line, i) => {
      const row = JSON.parse(line) as Record<string, unknown>;
      expect(Object.keys(row)).toEqual(COLUMNS);
      expect(row.response).toBe(input[i]?.response);
      for (const message of row.prompt as object[]) expect(Object.keys(message)).toEqual(['content', 'role']);
    });
  });

  it('verl: reward_model and extra_info load as dicts (struct columns), not strings', () => {
    const out = join(dir, 'verl.parquet');
    spa('export', '--in', sft, '--format', 'verl', '--out', out);
    const got = loadFeatures(out);
    expect(got.num_rows).toBe(input.length);
    expect(got.columns).toEqual(COLUMNS);
    expect(got.features['reward_model']).toBe(
      "{'ground_truth': {'numbers': List(Value('int64')), 'target': Value('int64')}, 'style': Value('string')}",
    );
    expect(got.features['extra_info']).toBe("{'index': Value('int64'), 'split': Value('string')}");
    expect(got.features['prompt']).toBe("List({'content': Value('string'), 'role': Value('string')})");
    expect(got.python_types['reward_model']).toBe('dict');
    expect(got.python_types['extra_info']).toBe('dict');
    expect(got.first['reward_model']).toEqual({
      ground_truth: { numbers: [0, 0], target: 0 },
      style: 'rule',
    });
    expect(got.rows.map((r) => r['extra_info'])).toEqual(
      input.map((r) => {
        const [, index, split] = /'index': (\d+), 'split': '(\w+)'/.exec(r.extra_info)!;
        return { index: Number(index), split };
      }),
    );
    expect(got.rows.map((r) => r['response'])).toEqual(input.map((r) => r.response));
  });

  it("trl: TRL's conversational prompt-completion columns, lists of {role, content} messages", () => {
    const out = join(dir, 'trl_train.parquet');
    spa('export', '--in', sft, '--format', 'trl', '--out', out, '--split-val', '0.2');
    const got = loadFeatures(out);
    expect(got.columns).toEqual(['prompt', 'completion']);
    const messages = "List({'role': Value('string'), 'content': Value('string')})";
    expect(got.features).toEqual({ prompt: messages, completion: messages });
    expect(got.conversational).toBe(true);
    const val = loadFeatures(join(dir, 'trl_val.parquet'));
    const both = [...got.rows, ...val.rows];
    expect(both).toHaveLength(input.length);
    const key = (prompt: unknown, completion: string) => JSON.stringify([prompt, completion]);
    expect(
      both.map((r) => key(r['prompt'], (r['completion'] as { content: string }[])[0]!.content)).sort(),
    ).toEqual(
      input
        .map((r) =>
          key(
            r.prompt.map((m) => ({ role: m.role, content: m.content })),
            r.response,
          ),
        )
        .sort(),
    );
    for (const r of both)
      expect((r['completion'] as { role: string }[]).map((m) => m.role)).toEqual(['assistant']);
  });

  it('a bad input line fails with its line number and writes nothing', () => {
    const bad = join(dir, 'bad.jsonl');
    appendFileSync(bad, `${JSON.stringify(input[0])}\n{"prompt": 1}\n`);
    const r = spawnSync(
      process.execPath,
      ['bin/spa.mjs', 'export', '--in', bad, '--format', 'parquet', '--out', join(dir, 'bad.parquet')],
      {
        cwd: repoRoot,
        encoding: 'utf8',
      },
    );
    expect(r.status).toBe(1);
    expect(existsSync(join(dir, 'bad.parquet'))).toBe(false);
    expect(r.stderr).toMatch(/bad\.jsonl:2: not an SftRow: data_source is missing; prompt: got 1/);
  });
});
