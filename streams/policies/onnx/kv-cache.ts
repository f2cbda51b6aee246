/**
 * The KV cache between decoding steps: one float32 tensor per layer and key/value, shaped
 * `[batch, kv_heads, length, head_dim]` (export.py's graph interface). Rows of finished
 * continuations are dropped by copying the kept rows into smaller tensors, and leading columns
 * that every kept row has as left padding are dropped with them, so later steps attend over
 * less.
 */
import { Tensor } from 'onnxruntime-node';

/** Cache geometry shared by every layer. */
export interface KvShape {
  readonly layers: number;
  readonly kvHeads: number;
  readonly headDim: number;
}

/** The past key/values fed to the next step, in the graph's `past_key_values.*` order. */
export class KvCache {
  private constructor(
    /** `2 * layers` tensors: layer 0 key, layer 0 value, layer 1 key, … */
    readonly tensors: readonly Tensor[],
    readonly batch: number,
    /** Past sequence length (columns). */
    readonly length: number,
    private readonly shape: KvShape,
  ) {}

  /** An empty cache (`length` 0) for `batch` rows: the first call runs the whole prompt. */
  static empty(shape: KvShape, batch: number): KvCache {
    const dims = [batch, shape.kvHeads, 0, shape.headDim];
    const tensors = Array.from(
      { length: 2 * shape.layers },
      () => new Tensor('float32', new Float32Array(0), dims),
    );
    return new KvCache(tensors, batch, 0, shape);
  }

  /** Wraps the graph's `present.*` outputs (already in past order) as the next step's cache. */
  static fromPresent(present: readonly Tensor[], shape: KvShape): KvCache {
    const first = present[0];
    if (!first || present.length !== 2 * shape.layers) {
      throw new Error(`expected ${2 * shape.layers} present tensors, got ${present.length}`);
    }
    const [batch, heads, length, headDim] = first.dims as [number, number, number, number];
    if (heads !== shape.kvHeads || headDim !== shape.headDim) {
      throw new Error(
        `present tensor shape [${first.dims.join(', ')}] disagrees with the manifest's ` +
          `kv heads ${shape.kvHeads} × head dim ${shape.headDim}`,
      );
    }
    return new KvCache(present, batch, length, shape);
  }

  /**
   * A cache holding only `rows` (indices into this batch, in the new order), without the
   * first `dropColumns` columns.
   */
  select(rows: readonly number[], dropColumns: number): KvCache {
    const { kvHeads, headDim } = this.shape;
    const length = this.length - dropColumns;
    if (dropColumns < 0 || length < 0)
      throw new Error(`cannot drop ${dropColumns} of ${this.length} columns`);
    const oldRowStride = kvHeads * this.length * headDim;
    const newRowStride = kvHeads * length * headDim;
    const tensors = this.tensors.map((tensor) => {
      const source = tensor.data as Float32Array;
      const target = new Float32Array(rows.length * newRowStride);
      rows.forEach((row, r) => {
        for (let h = 0; h < kvHeads; h++) {
          const from = row * oldRowStride + (h * this.length + dropColumns) * headDim;
          target.set(source.subarray(from, from + length * headDim), r * newRowStride + h * length * headDim);
        }
      });
      return new Tensor('float32', target, [rows.length, kvHeads, length, headDim]);
    });
    return new KvCache(tensors, rows.length, length, this.shape);
  }
}
