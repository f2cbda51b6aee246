/**
 * The split KV cache without a real model: the graph edit on a small hand-built ONNX graph run by
 * onnxruntime-node, and KvCache's fold/select over the settled + recent parts.
 */
import { fileURLToPath } from 'node:url';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { KvCache } from '../../policies/onnx/kv-cache.js';
import { EditableModel } from '../../policies/onnx/onnx-graph.js';
import { recentName, splitCache } from '../../policies/onnx/split-cache-graph.js';

const ModelProto = protobuf
  .loadSync(fileURLToPath(new URL('../../policies/onnx/onnx.proto', import.meta.url)))
  .lookupType('onnx.ModelProto');

const FLOAT = 1;
const INT64 = 7;
const kvType = {
  tensorType: {
    elemType: FLOAT,
    shape: { dim: [{ dimParam: 'b' }, { dimValue: 1 }, { dimParam: 's' }, { dimValue: 2 }] },
  },
};
const info = (name: string, type: object = kvType) => ({ name, type });

/**
 * past [b,1,s,2] and new [b,1,n,2] → present = Concat(Identity-Concat(past), new), the past
 * length through Shape(past), and `out` = 2 · present (a reader of present).
 */
function toyModel(extraReader?: string): Uint8Array {
  const nodes = [
    {
      opType: 'Concat',
      input: ['past_key_values.0.key'],
      output: ['past_id'],
      attribute: [{ name: 'axis', type: 2, i: -2 }],
    },
    {
      opType: 'Concat',
      input: ['past_id', 'new'],
      output: ['present.0.key'],
      attribute: [{ name: 'axis', type: 2, i: -2 }],
    },
    { opType: 'Shape', input: ['past_id'], output: ['past_shape'] },
    { opType: 'Add', input: ['present.0.key', 'present.0.key'], output: ['out'] },
    ...(extraReader ? [{ opType: extraReader, input: ['past_key_values.0.key'], output: ['extra'] }] : []),
  ];
  const model = {
    irVersion: 8,
    opsetImport: [{ domain: '', version: 17 }],
    graph: {
      name: 'toy',
      node: nodes,
      input: [info('past_key_values.0.key'), info('new')],
      output: [
        info('out'),
        info('present.0.key'),
        info('past_shape', { tensorType: { elemType: INT64, shape: { dim: [{ dimValue: 4 }] } } }),
        ...(extraReader ? [info('extra')] : []),
      ],
    },
  };
  return ModelProto.encode(ModelProto.fromObject(model)).finish();
}

const kv = (batch: number, length: number, start: number) =>
  new Tensor(
    'float32',
    Float32Array.from({ length: batch * length * 2 }, (_, i) => start + i),
    [batch, 1, length, 2],
  );

/** The split-cache variant of ONNX bytes, as bytes (causal-lm.ts does the same inside its edits). */
function splitCacheGraph(model: Uint8Array, pastNames: string[], presentNames: string[]): Uint8Array {
  const editable = EditableModel.decode(model);
  splitCache(editable.graph, pastNames, presentNames);
  return editable.encode();
}

describe('splitCache', () => {
  it('gives the same outputs as the whole graph, returning only recent + new as present', async () => {
    const whole = await InferenceSession.create(toyModel());
    const split = await InferenceSession.create(
      splitCacheGraph(toyModel(), ['past_key_values.0.key'], ['present.0.key']),
    );
    expect([...split.inputNames].sort()).toEqual(['new', 'past_key_values.0.key', 'recent.0.key']);
    // batch 2, past 5 columns (3 settled + 2 recent), 1 new column
    const past = kv(2, 5, 0);
    const data = past.data as Float32Array;
    const settled = new Float32Array(2 * 3 * 2);
    const recent = new Float32Array(2 * 2 * 2);
    for (let b = 0; b < 2; b++) {
      settled.set(data.subarray(b * 10, b * 10 + 6), b * 6);
      recent.set(data.subarray(b * 10 + 6, b * 10 + 10), b * 4);
    }
    const fresh = kv(2, 1, 100);
    const a = await whole.run({ 'past_key_values.0.key': past, new: fresh });
    const b = await split.run({
      'past_key_values.0.key': new Tensor('float32', settled, [2, 1, 3, 2]),
      [recentName('past_key_values.0.key')]: new Tensor('float32', recent, [2, 1, 2, 2]),
      new: fresh,
    });
    expect(Array.from(b.out?.data as Float32Array)).toEqual(Array.from(a.out?.data as Float32Array));
    expect(Array.from(b.past_shape?.data as BigInt64Array)).toEqual([2n, 1n, 5n, 2n]);
    expect(b['present.0.key']?.dims).toEqual([2, 1, 3, 2]);
    const full = a['present.0.key']?.data as Float32Array; // [2, 1, 6, 2]: keep columns 3..5 of each row
    expect(Array.from(b['present.0.key']?.data as Float32Array)).toEqual([
      ...full.subarray(6, 12),
      ...full.subarray(18, 24),
    ]);
  });

  it('refuses a graph whose past input has another reader, naming it', () => {
    expect(() => splitCacheGraph(toyModel('Relu'), ['past_key_values.0.key'], ['present.0.key'])).toThrow(
      /past_key_values\.0\.key is read by a Relu node/,
    );
  });
});

describe('KvCache (split layout)', () => {
  const shape = { layers: 1, kvHeads: 1, headDim: 2 };
  /** Columns of one row of a [batch, 1, length, 2] tensor, as their first element. */
  const firstOfColumns = (t: Tensor, row: number) => {
    const n = t.dims[2] as number;
    return Array.from({ length: n }, (_, c) => (t.data as Float32Array)[(row * n + c) * 2]);
  };

  it('adopts the prompt pass as settled, keeps steps as recent, folds at √(2 × settled) columns', () => {
    let cache = KvCache.empty(shape, 2, true).next([kv(2, 200, 0), kv(2, 200, 0)]);
    expect([cache.tensors[0]?.dims[2], cache.recent?.[0]?.dims[2], cache.length]).toEqual([200, 0, 200]);
    for (let n = 1; n < 20; n++) cache = cache.next([kv(2, n, 1000), kv(2, n, 1000)]); // recent < 20
    expect([cache.tensors[0]?.dims[2], cache.recent?.[0]?.dims[2], cache.length]).toEqual([200, 19, 219]);
    cache = cache.next([kv(2, 20, 5000), kv(2, 20, 5000)]); // 20² = 2 × 200: fold
    expect([cache.tensors[0]?.dims[2], cache.recent?.[0]?.dims[2], cache.length]).toEqual([220, 0, 220]);
    const row1 = firstOfColumns(cache.tensors[0] as Tensor, 1);
    expect(row1.slice(199, 202)).toEqual([400 + 199 * 2, 5000 + 40, 5000 + 42]);
  });

  it('selects rows and drops columns across both parts as over the folded cache', () => {
    const split = KvCache.empty(shape, 3, true)
      .next([kv(3, 300, 0), kv(3, 300, 0)])
      .next([kv(3, 4, 10000), kv(3, 4, 10000)]);
    expect(split.length).toBe(304);
    const kept = split.select([2, 0], 7);
    expect([kept.batch, kept.length, kept.recent?.[0]?.dims[2]]).toEqual([2, 297, 0]);
    const row = firstOfColumns(kept.tensors[1] as Tensor, 0); // old row 2
    expect(row[0]).toBe(2 * 600 + 7 * 2);
    expect(row.slice(-4)).toEqual([10000 + 16, 10000 + 18, 10000 + 20, 10000 + 22]);
  });
});
