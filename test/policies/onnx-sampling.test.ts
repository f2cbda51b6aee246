/**
 * The ONNX policy's pieces that need no model: next-token sampling (temperature, top-p), the
 * per-row stop detector, the KV-cache row/column slicing and the artifact's sha256 check.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tensor } from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { Rng } from '../../envs/rng.js';
import { loadPolicyArtifact, parseManifest } from '../../policies/onnx/artifact.js';
import { KvCache } from '../../policies/onnx/kv-cache.js';
import { argmax, checkSampling, nucleus, sampleToken, softmaxWeights } from '../../policies/onnx/sampler.js';
import { ANSWER_END, StopDetector } from '../../policies/onnx/stop-detector.js';

/** Empirical frequencies of `draws` samples from one logits row. */
function frequencies(logits: number[], temperature: number, topP: number, draws: number): number[] {
  const rng = new Rng(42);
  const row = Float32Array.from(logits);
  const counts = new Array<number>(logits.length).fill(0);
  for (let i = 0; i < draws; i++) {
    const id = sampleToken(row, 0, logits.length, { temperature, topP }, rng);
    counts[id] = (counts[id] ?? 0) + 1;
  }
  return counts.map((c) => c / draws);
}

describe('sampleToken', () => {
  it('is greedy at temperature 0: the first maximum, whatever the rng', () => {
    const row = Float32Array.from([0.1, 3, -2, 3, 1]);
    expect(argmax(row, 0, 5)).toBe(1);
    expect(sampleToken(row, 0, 5, { temperature: 0, topP: 1 }, new Rng(1))).toBe(1);
    expect(sampleToken(row, 0, 5, { temperature: 0, topP: 0.1 }, new Rng(2))).toBe(1);
    // offset picks the row: row 2 of a [2, 3] logits block
    expect(argmax(Float32Array.from([9, 0, 0, 0, 0, 5]), 3, 3)).toBe(2);
  });

  it('samples softmax(logits / T): probabilities 1:2:4 at T = 1, 1:√2:2 at T = 2', () => {
    const logits = [0, Math.log(2), Math.log(4)];
    const atOne = frequencies(logits, 1, 1, 20_000);
    [1 / 7, 2 / 7, 4 / 7].forEach((p, i) => expect(atOne[i]).toBeCloseTo(p, 1.7));
    const atTwo = frequencies(logits, 2, 1, 20_000);
    const z = 1 + Math.SQRT2 + 2;
    [1 / z, Math.SQRT2 / z, 2 / z].forEach((p, i) => expect(atTwo[i]).toBeCloseTo(p, 1.7));
  });

  it('keeps the top-p nucleus (HF TopPLogitsWarper) and renormalises inside it', () => {
    const probs = [0.05, 0.3, 0.5, 0.15];
    const logits = probs.map(Math.log);
    const { weights, total } = softmaxWeights(Float32Array.from(logits), 0, 4, 1);
    expect(nucleus(weights, total, 0.8)).toEqual([2, 1]); // 0.5 + 0.3 reach 0.8
    expect(nucleus(weights, total, 0.81)).toEqual([2, 1, 3]);
    expect(nucleus(weights, total, 1e-9)).toEqual([2]); // at least one token
    const freq = frequencies(logits, 1, 0.8, 20_000);
    expect(freq[0]).toBe(0);
    expect(freq[3]).toBe(0);
    expect(freq[2]).toBeCloseTo(0.5 / 0.8, 1.7);
    expect(freq[1]).toBeCloseTo(0.3 / 0.8, 1.7);
  });

  it('is reproducible from the rng seed', () => {
    const row = Float32Array.from({ length: 50 }, (_, i) => Math.sin(i));
    const draw = (seed: number) => {
      const rng = new Rng(seed);
      return Array.from({ length: 20 }, () => sampleToken(row, 0, 50, { temperature: 1, topP: 0.9 }, rng));
    };
    expect(draw(5)).toEqual(draw(5));
    expect(draw(5)).not.toEqual(draw(6));
  });

  it('rejects settings outside SPA-compatible ranges, naming them', () => {
    expect(() => checkSampling({ temperature: -1, topP: 1 })).toThrow(/temperature -1/);
    expect(() => checkSampling({ temperature: 1, topP: 0 })).toThrow(/topP 0/);
    expect(() => checkSampling({ temperature: 1, topP: 1.5 })).toThrow(/topP 1.5/);
  });
});

describe('StopDetector', () => {
  // A toy vocabulary: id → text (id 0 = <|im_end|>, never decoded: it is a stop id).
  const vocab = ['<|im_end|>', '<', '/', 'answer', '>', 'Up', ' ', '>\n', '</answer>', 'é'];
  const rule = (maxNewTokens: number, stopStrings: readonly string[] = [ANSWER_END]) => ({
    stopIds: new Set([0]),
    decode: (ids: readonly number[]) => ids.map((id) => vocab[id]).join(''),
    maxNewTokens,
    stopStrings,
  });
  const spaRule = (maxNewTokens: number) => {
    const { stopStrings: _none, ...spa } = rule(maxNewTokens);
    return spa;
  };

  it('by default (SPA) goes on past `</answer>` to eos; the answer stop is an option', () => {
    const d = new StopDetector(spaRule(400));
    expect(feed(d, [5, 6, 8, 6, 5])).toBeUndefined();
    expect(d.push(0)).toBe('eos');
    expect(d.text()).toBe('Up </answer> Up');
    const budget = new StopDetector(spaRule(3));
    expect(feed(budget, [5, 8, 5])).toBe('length');
    expect(budget.text()).toBe('Up</answer>Up');
  });
  const feed = (detector: StopDetector, ids: number[]) => ids.map((id) => detector.push(id)).find(Boolean);

  it('with the `</answer>` option: stops once `</answer>` appears across several tokens, keeping it and cutting what follows', () => {
    const d = new StopDetector(rule(400));
    // "Up <" "/" "answer" ">\n": the closing '>' arrives with a trailing newline
    expect(feed(d, [5, 6, 1, 2, 3])).toBeUndefined();
    expect(d.push(7)).toBe('answer');
    expect(d.text()).toBe('Up </answer>');
    expect(() => d.push(5)).toThrow(/after the row stopped/);
  });

  it('finds `</answer>` after a long continuation (windowed decoding)', () => {
    const d = new StopDetector(rule(400));
    expect(
      feed(
        d,
        Array.from({ length: 300 }, (_, i) => (i % 2 ? 5 : 9)),
      ),
    ).toBeUndefined();
    expect(d.push(8)).toBe('answer');
    expect(d.text().endsWith('éUp</answer>')).toBe(true);
    expect(d.ids).toHaveLength(301);
  });

  it('ends at a stop id without putting it in the continuation', () => {
    const d = new StopDetector(rule(400));
    expect(feed(d, [5, 6, 5, 0])).toBe('eos');
    expect(d.ids).toEqual([5, 6, 5]);
    expect(d.text()).toBe('Up Up');
  });

  it('ends at the token budget', () => {
    const d = new StopDetector(rule(3));
    expect(feed(d, [5, 6])).toBeUndefined();
    expect(d.push(4)).toBe('length'); // a lone '>' is not `</answer>`
    expect(d.text()).toBe('Up >');
    expect(() => new StopDetector(rule(0))).toThrow(/maxNewTokens 0/);
  });
});

describe('KvCache.select', () => {
  it('keeps the chosen rows in the new order and drops leading columns', () => {
    // [batch 3, heads 2, length 3, head_dim 2]; value = 1000·row + 100·head + 10·column + d
    const dims = [3, 2, 3, 2];
    const data = new Float32Array(3 * 2 * 3 * 2);
    for (let r = 0; r < 3; r++)
      for (let h = 0; h < 2; h++)
        for (let c = 0; c < 3; c++)
          for (let d = 0; d < 2; d++) data[((r * 2 + h) * 3 + c) * 2 + d] = 1000 * r + 100 * h + 10 * c + d;
    const shape = { layers: 1, kvHeads: 2, headDim: 2 };
    const cache = KvCache.empty(shape, 3).next([
      new Tensor('float32', data, dims),
      new Tensor('float32', data, dims),
    ]);
    const kept = cache.select([2, 0], 1);
    expect([kept.batch, kept.length]).toEqual([2, 2]);
    expect(kept.tensors[0]?.dims).toEqual([2, 2, 2, 2]);
    expect(Array.from(kept.tensors[1]?.data as Float32Array)).toEqual([
      2010, 2011, 2020, 2021, 2110, 2111, 2120, 2121, 10, 11, 20, 21, 110, 111, 120, 121,
    ]);
    expect(KvCache.empty(shape, 4).tensors[0]?.dims).toEqual([4, 2, 0, 2]);
  });
});

describe('loadPolicyArtifact', () => {
  const manifest = (sha256: string) => ({
    version: 3,
    stage: 'sft',
    step: 10,
    model: 'tiny',
    format: 'onnx',
    sha256,
    file: 'model.onnx',
    num_layers: 1,
    num_key_value_heads: 1,
    head_dim: 2,
    vocab_size: 4,
    eos_token_id: 2,
    inputs: ['input_ids'],
    outputs: ['logits'],
  });

  it('refuses a model whose sha256 is not the manifest’s, naming both digests', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'spa-artifact-'));
    try {
      await writeFile(join(folder, 'model.onnx'), 'not the exported bytes');
      const wanted = createHash('sha256').update('the exported bytes').digest('hex');
      await writeFile(join(folder, 'manifest.json'), JSON.stringify(manifest(wanted)));
      const actual = createHash('sha256').update('not the exported bytes').digest('hex');
      await expect(loadPolicyArtifact(folder)).rejects.toThrow(
        `sha256 ${actual} does not match manifest.json's ${wanted}`,
      );
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('names the bad manifest field', () => {
    expect(() => parseManifest({ ...manifest('a'.repeat(64)), num_layers: '2' }, 'm.json')).toThrow(
      /m.json: "num_layers" is "2", expected an integer/,
    );
    expect(() => parseManifest({ ...manifest('a'.repeat(64)), format: 'torch' }, 'm.json')).toThrow(
      /"format"/,
    );
    expect(() => parseManifest({ ...manifest('XYZ') }, 'm.json')).toThrow(/"sha256" must be 64/);
  });
});
