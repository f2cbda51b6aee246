/**
 * The ONNX policy against the trainer's Python stack on the same exported tiny model: tokenizer
 * ids, greedy tokens vs PyTorch `generate`, batched = unbatched, sha256 refusal, stops.
 * Needs trainer/.venv (built by scripts/setup-python.mjs on first use) → slow project.
 */
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  callReference,
  referenceFixture,
  type ReferenceFixture,
} from '../../bench/python/generate-reference.js';
import { Rng } from '../../envs/rng.js';
import { spaEnv } from '../../envs/registry.js';
import { loadPolicyArtifact, onnxPolicy, type OnnxPolicy } from '../../policies/onnx/index.js';
import { spaPrompts } from '../../policies/onnx/sample-prompts.js';
import type { PolicyRequest } from '../../policies/policy.js';

let fixture: ReferenceFixture;
let greedy: OnnxPolicy;
let prompts: string[];

beforeAll(async () => {
  fixture = await referenceFixture();
  greedy = await onnxPolicy({ folder: fixture.artifact, temperature: 0, intraOpThreads: 1 });
  prompts = spaPrompts((await loadPolicyArtifact(fixture.artifact)).chatTemplate, 6);
});

afterAll(async () => {
  await greedy?.close?.();
});

describe('tokenizer (@huggingface/tokenizers on the artifact tokenizer.json)', () => {
  it('gives the Python tokenizer ids for real SPA prompts and decodes them back', async () => {
    expect(prompts.some((p) => p.includes('√'))).toBe(true);
    const py = await callReference<{ ids: number[][]; round_trip: boolean[] }>(
      'tokenize',
      ['--artifact', fixture.artifact],
      {
        prompts,
      },
    );
    const ids = prompts.map((p) => greedy.tokenizer.encode(p));
    expect(ids).toEqual(py.ids);
    expect(py.round_trip.every(Boolean)).toBe(true);
    ids.forEach((row, i) =>
      expect(greedy.tokenizer.decode(row, { keepSpecialTokens: true })).toBe(prompts[i]),
    );
    const imStart = greedy.tokenizer.encode('<|im_start|>');
    expect(imStart).toHaveLength(1); // a special token written in the text is one id
    expect(ids[0]?.[0]).toBe(imStart[0]);
  });
});

describe('greedy decoding', () => {
  it('produces the PyTorch greedy `generate` tokens on 3 real SPA prompts (400-token budget)', async () => {
    const three = prompts.slice(0, 3);
    const ours = await greedy.generate(three);
    const py = await callReference<{ tokens: number[][] }>(
      'greedy',
      ['--model-dir', fixture.model_dir, '--artifact', fixture.artifact, '--max-new-tokens', '400'],
      { prompts: three },
    );
    ours.forEach((g, i) => {
      const theirs = py.tokens[i] as number[];
      if (g.stopReason === 'length') expect(g.ids).toEqual(theirs);
      if (g.stopReason === 'eos') expect([...g.ids, theirs.at(-1)]).toEqual(theirs); // HF keeps the eos id
      if (g.stopReason === 'answer') expect(g.ids).toEqual(theirs.slice(0, g.ids.length));
    });
    expect(ours.reduce((n, g) => n + g.ids.length, 0)).toBeGreaterThan(600);
    expect(new Set(ours.flatMap((g) => g.ids)).size).toBeGreaterThan(50); // not one repeated token
    const decoded = await callReference<{ texts: string[] }>('decode', ['--artifact', fixture.artifact], {
      ids: ours.map((g) => g.ids),
    });
    ours.forEach((g, i) => {
      if (g.stopReason !== 'answer') expect(g.text).toBe(decoded.texts[i]);
    });
  });

  it('gives the same tokens batched (left-padded, rows dropped as they finish) as one by one', async () => {
    const lengths = new Set(prompts.map((p) => greedy.tokenizer.encode(p).length));
    expect(lengths.size).toBeGreaterThan(1); // padding is exercised
    const batched = await greedy.generate(prompts);
    const single = [];
    for (const p of prompts) single.push(...(await greedy.generate([p])));
    expect(batched.map((g) => g.ids)).toEqual(single.map((g) => g.ids));
    expect(batched.map((g) => g.stopReason)).toEqual(single.map((g) => g.stopReason));
  });
  it('with a context window, continues the last window − budget prompt tokens as if they were the prompt', async () => {
    const budget = 50;
    const ids = greedy.tokenizer.encode(prompts[0]!);
    // the window cuts ≥ 30 tokens on the left, where the rest decodes to a prompt of exactly those tokens
    const roundTrips = (k: number) =>
      JSON.stringify(
        greedy.tokenizer.encode(greedy.tokenizer.decode(ids.slice(k), { keepSpecialTokens: true })),
      ) === JSON.stringify(ids.slice(k));
    const cut = Array.from({ length: 100 }, (_, i) => 30 + i).find(roundTrips);
    expect(cut).toBeDefined();
    const kept = ids.slice(cut);
    const suffix = greedy.tokenizer.decode(kept, { keepSpecialTokens: true });
    const options = { folder: fixture.artifact, temperature: 0, intraOpThreads: 1, maxNewTokens: budget };
    const windowed = await onnxPolicy({ ...options, contextWindow: kept.length + budget });
    const plain = await onnxPolicy(options);
    try {
      const [truncated] = await windowed.generate([prompts[0]!]);
      const [fromSuffix] = await plain.generate([suffix]);
      const [whole] = await plain.generate([prompts[0]!]);
      expect(truncated!.ids).toEqual(fromSuffix!.ids);
      expect(truncated!.ids).not.toEqual(whole!.ids); // the cut changed what the model saw
    } finally {
      await windowed.close?.();
      await plain.close?.();
    }
  });

  it('gives the same tokens when the prompt pass goes through the cache in 40-token chunks', async () => {
    const chunked = await onnxPolicy({
      folder: fixture.artifact,
      temperature: 0,
      maxNewTokens: 50,
      intraOpThreads: 1,
      prefillTokenBudget: 40,
    });
    try {
      const [whole] = await greedy.generate([prompts[0] as string]);
      const promptLength = greedy.tokenizer.encode(prompts[0] as string).length;
      expect(whole?.forwardCalls).toBe(1 + 399); // the default budget takes this prompt in one call
      const [g] = await chunked.generate([prompts[0] as string]);
      expect(g?.stopReason).toBe('length');
      expect(g?.ids).toEqual(whole?.ids.slice(0, 50));
      expect(g?.forwardCalls).toBe(Math.ceil(promptLength / 40) + 49); // chunks + one call per later token
    } finally {
      await chunked.close?.();
    }
  });
});

describe('sampling (temperature 1, top-p 1, docs/spa-prompts.md#sampling)', () => {
  it('is reproducible per row and independent of the batch it runs in', async () => {
    const policy = await onnxPolicy({
      folder: fixture.artifact,
      seed: 7,
      maxNewTokens: 60,
      intraOpThreads: 1,
    });
    try {
      const four = prompts.slice(0, 4);
      const batched = await policy.generate(
        four,
        four.map((_, i) => new Rng(100 + i)),
      );
      const single = [];
      for (const [i, p] of four.entries()) single.push(...(await policy.generate([p], [new Rng(100 + i)])));
      expect(batched.map((g) => g.ids)).toEqual(single.map((g) => g.ids));
      const other = await policy.generate(
        four,
        four.map((_, i) => new Rng(200 + i)),
      );
      expect(other.map((g) => g.ids)).not.toEqual(batched.map((g) => g.ids));
    } finally {
      await policy.close?.();
    }
  });

  it('gives the same sampled tokens batched, rows dropped mid-batch and recent folded, as one at a time', async () => {
    const policy = await onnxPolicy({
      folder: fixture.artifact,
      seed: 3,
      maxNewTokens: 300,
      intraOpThreads: 1,
    });
    try {
      const rngs = () => prompts.map((_, i) => new Rng(300 + i));
      const batched = await policy.generate(prompts, rngs());
      const single = [];
      for (const [i, p] of prompts.entries()) single.push(...(await policy.generate([p], [rngs()[i]!])));
      expect(batched.map((g) => g.ids)).toEqual(single.map((g) => g.ids));
      expect(new Set(batched.map((g) => g.ids.length)).size).toBeGreaterThan(1); // rows dropped mid-batch
      expect(Math.max(...batched.map((g) => g.ids.length))).toBeGreaterThan(40); // several folds of recent
    } finally {
      await policy.close?.();
    }
  });

  it('stops at <|im_end|> (dropped) or at 400 tokens by default, as SPA', async () => {
    const policy = await onnxPolicy({ folder: fixture.artifact, seed: 3, intraOpThreads: 1 });
    try {
      const results = await policy.generate(
        Array.from({ length: 16 }, (_, i) => prompts[i % prompts.length] as string),
      );
      expect(new Set(results.map((g) => g.stopReason)).has('answer')).toBe(false);
      for (const g of results) {
        expect(g.ids.some((id) => policy.tokenizer.stopIds.has(id))).toBe(false);
        if (g.stopReason === 'length') expect(g.ids).toHaveLength(400);
        else expect(g.ids.length).toBeLessThan(400);
      }
    } finally {
      await policy.close?.();
    }
  });

  it('with stopAtAnswer: stops at </answer> (kept), at <|im_end|> (dropped) or at 400 tokens', async () => {
    const policy = await onnxPolicy({
      folder: fixture.artifact,
      seed: 3,
      intraOpThreads: 1,
      stopAtAnswer: true,
    });
    try {
      const results = await policy.generate(
        Array.from({ length: 16 }, (_, i) => prompts[i % prompts.length] as string),
      );
      const reasons = new Set(results.map((g) => g.stopReason));
      expect(reasons.has('answer')).toBe(true);
      const answerId = policy.tokenizer.encode('</answer>');
      for (const g of results) {
        expect(g.ids.some((id) => policy.tokenizer.stopIds.has(id))).toBe(false);
        expect(g.text).not.toContain('<|im_end|>');
        if (g.stopReason === 'answer') {
          expect(g.text.endsWith('</answer>')).toBe(true);
          expect(g.text.indexOf('</answer>')).toBe(g.text.length - '</answer>'.length);
          expect(g.ids.slice(-answerId.length)).toEqual(answerId); // the tiny vocab has it as one token
        } else {
          expect(g.text).not.toContain('</answer>');
          expect(g.ids.length).toBe(g.stopReason === 'length' ? 400 : g.ids.length);
          if (g.stopReason === 'eos') expect(g.ids.length).toBeLessThan(400);
        }
      }
    } finally {
      await policy.close?.();
    }
  });
});

describe('the Policy interface', () => {
  it('answers each request with a continuation, named after the folder with the manifest version', async () => {
    const env = spaEnv('sokoban', 10000);
    const conversation = (state: string) => [
      { role: 'system' as const, content: "You're a helpful assistant. " },
      { role: 'user' as const, content: `Turn 1:\nState:\n${state}` },
    ];
    const requests: PolicyRequest[] = ['#P_X#', '#_PX#'].map((state) => ({
      env: 'sokoban',
      messages: conversation(state),
      actionsLeft: 10,
      view: env.clone(),
    }));
    const texts = await greedy.act(requests);
    // act renders each conversation with the artifact's own template, then `<think>`.
    const rendered = requests.map(
      (r) =>
        `<|im_start|>system\n${r.messages[0]!.content}<|im_end|>\n<|im_start|>user\n${r.messages[1]!.content}<|im_end|>\n<|im_start|>assistant\n<think>`,
    );
    const direct = await greedy.generate(rendered);
    expect(texts).toEqual(direct.map((g) => g.text));
    expect(greedy.name).toBe('onnx:v000001');
    expect(greedy.version).toBe(1);
  });
});

describe('artifact verification', () => {
  it('refuses a model.onnx whose sha256 differs from manifest.json, naming both digests', async () => {
    const copy = await mkdtemp(join(tmpdir(), 'spa-onnx-'));
    try {
      for (const name of await readdir(fixture.artifact))
        await copyFile(join(fixture.artifact, name), join(copy, name));
      const bytes = await readFile(join(copy, 'model.onnx'));
      const last = bytes.length - 1;
      bytes.writeUInt8(bytes.readUInt8(last) ^ 0xff, last); // one flipped bit of the initializers
      await writeFile(join(copy, 'model.onnx'), bytes);
      const manifest = JSON.parse(await readFile(join(copy, 'manifest.json'), 'utf8')) as { sha256: string };
      await expect(onnxPolicy({ folder: copy })).rejects.toThrow(
        new RegExp(`sha256 [0-9a-f]{64} does not match manifest.json's ${manifest.sha256}`),
      );
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  });

  it('refuses an export whose manifest does not list the generator graph, saying how to re-export', async () => {
    const copy = await mkdtemp(join(tmpdir(), 'spa-onnx-'));
    try {
      for (const name of await readdir(fixture.artifact))
        await copyFile(join(fixture.artifact, name), join(copy, name));
      const manifest = JSON.parse(await readFile(join(copy, 'manifest.json'), 'utf8')) as {
        graph?: string[];
      };
      delete manifest.graph; // as exports made before the exporter wrote the generator's graph
      await writeFile(join(copy, 'manifest.json'), JSON.stringify(manifest));
      await expect(onnxPolicy({ folder: copy })).rejects.toThrow(
        /exported without split_cache \(manifest.json's "graph" does not list it\), .*grouped_attention .*-m spa_trainer\.export --model/,
      );
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  });
});
