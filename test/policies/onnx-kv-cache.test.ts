/**
 * KvCache's two parts without a model: the settled columns and the recent ones the graph returns
 * (trainer/spa_trainer/export/graph.py), folded and selected.
 */
import { Tensor } from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { KvCache } from '../../policies/onnx/kv-cache.js';

const kv = (batch: number, length: number, start: number) =>
  new Tensor(
    'float32',
    Float32Array.from({ length: batch * length * 2 }, (_, i) => start + i),
    [batch, 1, length, 2],
  );

describe('KvCache', () => {
  const shape = { layers: 1, kvHeads: 1, headDim: 2 };
  /** Columns of one row of a [batch, 1, length, 2] tensor, as their first element. */
  const firstOfColumns = (t: Tensor, row: number) => {
    const n = t.dims[2] as number;
    return Array.from({ length: n }, (_, c) => (t.data as Float32Array)[(row * n + c) * 2]);
  };

  it('adopts the prompt pass as settled, keeps steps as recent, folds at √(2 × settled) columns', () => {
    let cache = KvCache.empty(shape, 2).next([kv(2, 200, 0), kv(2, 200, 0)]);
    expect([cache.tensors[0]?.dims[2], cache.recent[0]?.dims[2], cache.length]).toEqual([200, 0, 200]);
    for (let n = 1; n < 20; n++) cache = cache.next([kv(2, n, 1000), kv(2, n, 1000)]); // recent < 20
    expect([cache.tensors[0]?.dims[2], cache.recent[0]?.dims[2], cache.length]).toEqual([200, 19, 219]);
    cache = cache.next([kv(2, 20, 5000), kv(2, 20, 5000)]); // 20² = 2 × 200: fold
    expect([cache.tensors[0]?.dims[2], cache.recent[0]?.dims[2], cache.length]).toEqual([220, 0, 220]);
    const row1 = firstOfColumns(cache.tensors[0] as Tensor, 1);
    expect(row1.slice(199, 202)).toEqual([400 + 199 * 2, 5000 + 40, 5000 + 42]);
  });

  it('selects rows and drops columns across both parts as over the folded cache', () => {
    const split = KvCache.empty(shape, 3)
      .next([kv(3, 300, 0), kv(3, 300, 0)])
      .next([kv(3, 4, 10000), kv(3, 4, 10000)]);
    expect(split.length).toBe(304);
    const kept = split.select([2, 0], 7);
    expect([kept.batch, kept.length, kept.recent[0]?.dims[2]]).toEqual([2, 297, 0]);
    const row = firstOfColumns(kept.tensors[1] as Tensor, 0); // old row 2
    expect(row[0]).toBe(2 * 600 + 7 * 2);
    expect(row.slice(-4)).toEqual([10000 + 16, 10000 + 18, 10000 + 20, 10000 + 22]);
  });
});
