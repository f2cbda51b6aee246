/**
 * A sliding-window export in onnxruntime-node: `tiny-local` (layer 1 attends to the last 48
 * positions, layer 2 to all; docs/spa-models.md#local) with redrawn weights, on real SPA prompts of
 * several hundred tokens. The load-time graph edits (split cache, last-position logits, grouped
 * attention) must still apply, and greedy decoding must give PyTorch `generate`'s tokens, whose
 * cache keeps only the window for layer 1 while the export keeps every column and masks by position.
 * Needs trainer/.venv (local_attention_reference.py) → slow project.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spaPrompts } from '../../policies/onnx/sample-prompts.js';
import { venvHasModule } from '../../bench/python/venv.js';
import type { Generation } from '../../policies/onnx/generate.js';
import { loadPolicyArtifact, onnxPolicy, type OnnxPolicy } from '../../policies/onnx/index.js';
import type { OnnxPolicyOptions } from '../../policies/onnx/onnx-policy.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const WINDOW = 48;
const NEW_TOKENS = 40;

/** `local_attention_reference.py args…` with `input` as JSON on stdin; its JSON answer. */
function reference<T>(args: readonly string[], input: unknown = {}): T {
  const run = spawnSync(
    join(repo, 'trainer/.venv/bin/python'),
    [join(repo, 'test/policies/local_attention_reference.py'), ...args],
    {
      cwd: join(repo, 'trainer'),
      env: { ...process.env, PYTHONPATH: join(repo, 'trainer'), OMP_NUM_THREADS: '1' },
      input: JSON.stringify(input),
      encoding: 'utf8',
    },
  );
  if (run.status !== 0) throw new Error(`local_attention_reference.py ${args[0]} failed:\n${run.stderr}`);
  return JSON.parse(run.stdout.trim().split('\n').at(-1)!) as T;
}

let dir: string;
let built: { model_dir: string; local: string; global: string };
let prompts: string[];
let policy: OnnxPolicy;
let ours: Generation[];

const open = (folder: string, options: Partial<OnnxPolicyOptions> = {}) =>
  onnxPolicy({ folder, temperature: 0, maxNewTokens: NEW_TOKENS, intraOpThreads: 1, ...options });

beforeAll(async () => {
  expect(await venvHasModule('transformers')).toBe(true); // builds trainer/.venv on first use
  dir = await mkdtemp(join(tmpdir(), 'spa-local-attention-'));
  built = reference(['build', dir]);
  prompts = spaPrompts((await loadPolicyArtifact(built.local)).chatTemplate, 3);
  policy = await open(built.local);
  ours = [];
  for (const p of prompts) ours.push(...(await policy.generate([p])));
});

afterAll(async () => {
  await policy?.close?.();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('a sliding-window export (tiny-local) in onnxruntime-node', () => {
  it('is recorded as such, with parity past the window', async () => {
    const manifest = JSON.parse(await readFile(join(built.local, 'manifest.json'), 'utf8')) as {
      parity_max_abs_diff: Record<string, number>;
      sliding_window: { window: number; window_effect: number };
    };
    expect(manifest.sliding_window.window).toBe(WINDOW);
    expect(manifest.parity_max_abs_diff.window_prompt).toBeLessThan(1e-4);
    expect(manifest.parity_max_abs_diff.window_decode).toBeLessThan(1e-4);
    expect(manifest.sliding_window.window_effect).toBeGreaterThan(1e-2);
  });

  it(`decodes PyTorch greedy generate's tokens (${NEW_TOKENS} new) after prompts several windows long`, () => {
    const py = reference<{ tokens: number[][]; prompt_tokens: number[] }>(
      ['greedy', built.model_dir, String(NEW_TOKENS)],
      { prompts },
    );
    expect(prompts.map((p) => policy.tokenizer.encode(p).length)).toEqual(py.prompt_tokens);
    expect(Math.min(...py.prompt_tokens)).toBeGreaterThan(4 * WINDOW);
    ours.forEach((g, i) => {
      const theirs = py.tokens[i] as number[];
      expect(g.ids.length).toBeGreaterThanOrEqual(20);
      if (g.stopReason === 'length') expect(g.ids).toEqual(theirs);
      else expect([...g.ids, theirs.at(-1)]).toEqual(theirs); // HF keeps the eos id
    });
    expect(new Set(ours.flatMap((g) => g.ids)).size).toBeGreaterThan(10); // not one repeated token
  });

  it('gives the same tokens batched and in 40-token prefill chunks', async () => {
    const variants = [
      policy, // batched below: left padding inside the window
      await open(built.local, { prefillTokenBudget: 40 }), // chunks under, across and past the window
    ];
    try {
      const batched = await variants[0]!.generate(prompts);
      expect(batched.map((g) => g.ids)).toEqual(ours.map((g) => g.ids));
      for (const variant of variants.slice(1)) {
        const rows: Generation[] = [];
        for (const p of prompts) rows.push(...(await variant.generate([p])));
        expect(rows.map((g) => g.ids)).toEqual(ours.map((g) => g.ids));
      }
    } finally {
      await Promise.all(variants.slice(1).map((v) => v.close?.()));
    }
  });

  it('differs from the same weights exported without the window (the comparison can tell)', async () => {
    const global = await open(built.global);
    try {
      const theirs = await global.generate(prompts);
      theirs.forEach((g, i) => expect(g.ids).not.toEqual(ours[i]!.ids));
    } finally {
      await global.close?.();
    }
  });
});
