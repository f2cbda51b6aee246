/**
 * The KV cache between decoding steps: float32 tensors per layer and key/value, shaped
 * `[batch, kv_heads, length, head_dim]`, in the two parts the exported graph takes
 * (trainer/spa_trainer/export/graph.py): `tensors`, the settled columns (`past_key_values.*`), and
 * `recent`, the newest few (`recent.*`). The graph returns only `recent` plus the new columns,
 * because onnxruntime-node copies every output into a fresh JS buffer (README.md#split-cache).
 * `recent` is folded into `tensors` once it holds √(2 × settled) columns: each fold copies the
 * whole cache once, each step copies `recent` out of onnxruntime, and that length keeps the sum
 * of both near its minimum (about √(2L) columns a step instead of L).
 *
 * Rows of finished continuations are dropped by copying the kept rows into smaller tensors, and
 * leading columns that every kept row has as left padding are dropped with them, so later steps
 * attend over less.
 */
import { Tensor } from 'onnxruntime-node';

/** Cache geometry shared by every layer. */
export interface KvShape {
  readonly layers: number;
  readonly kvHeads: number;
  readonly headDim: number;
}

/** Smallest `recent` length that is folded; below it a fold costs more than it saves. */
const MIN_FOLD = 16;

function emptyTensors(shape: KvShape, batch: number): Tensor[] {
  const dims = [batch, shape.kvHeads, 0, shape.headDim];
  return Array.from({ length: 2 * shape.layers }, () => new Tensor('float32', new Float32Array(0), dims));
}

/** Columns of one tensor `[batch, heads, length, headDim]`. */
function columns(t: Tensor): number {
  return t.dims[2] as number;
}

/**
 * Rows `rows` of the column-wise concatenation of `parts` (each `[batch, heads, *, headDim]`),
 * without its first `drop` columns, as one tensor.
 */
function gather(parts: readonly Tensor[], rows: readonly number[], drop: number, shape: KvShape): Tensor {
  const { kvHeads, headDim } = shape;
  const total = parts.reduce((n, t) => n + columns(t), 0);
  const length = total - drop;
  const target = new Float32Array(rows.length * kvHeads * length * headDim);
  rows.forEach((row, r) => {
    for (let h = 0; h < kvHeads; h++) {
      let at = (r * kvHeads + h) * length * headDim;
      let skip = drop;
      for (const part of parts) {
        const n = columns(part);
        const from = Math.min(skip, n);
        skip -= from;
        const base = (row * kvHeads + h) * n * headDim;
        const source = (part.data as Float32Array).subarray(base + from * headDim, base + n * headDim);
        target.set(source, at);
        at += source.length;
      }
    }
  });
  return new Tensor('float32', target, [rows.length, kvHeads, length, headDim]);
}

/** The past key/values fed to the next step, in the graph's `past_key_values.*` / `recent.*` order. */
export class KvCache {
  private constructor(
    /** `2 * layers` tensors: layer 0 key, layer 0 value, layer 1 key, … (the settled columns). */
    readonly tensors: readonly Tensor[],
    /** The newest columns, same order. */
    readonly recent: readonly Tensor[],
    readonly batch: number,
    private readonly shape: KvShape,
  ) {}

  /** An empty cache for `batch` rows. */
  static empty(shape: KvShape, batch: number): KvCache {
    return new KvCache(emptyTensors(shape, batch), emptyTensors(shape, batch), batch, shape);
  }

  /** Past sequence length (columns), both parts. */
  get length(): number {
    return columns(this.tensors[0] as Tensor) + columns(this.recent[0] as Tensor);
  }

  /**
   * The next cache from this step's `present.*` outputs (previous recent + this step's columns):
   * the new `recent`, folded into the settled part when it has grown long enough.
   */
  next(present: readonly Tensor[]): KvCache {
    checkPresent(present, this.shape);
    const settled = columns(this.tensors[0] as Tensor);
    const recent = columns(present[0] as Tensor);
    if (settled === 0)
      return new KvCache(present, emptyTensors(this.shape, this.batch), this.batch, this.shape);
    if (recent * recent < Math.max(MIN_FOLD * MIN_FOLD, 2 * settled)) {
      return new KvCache(this.tensors, present, this.batch, this.shape);
    }
    const rows = Array.from({ length: this.batch }, (_, r) => r);
    const folded = this.tensors.map((t, i) => gather([t, present[i] as Tensor], rows, 0, this.shape));
    return new KvCache(folded, emptyTensors(this.shape, this.batch), this.batch, this.shape);
  }

  /**
   * A cache holding only `rows` (indices into this batch, in the new order), without the
   * first `dropColumns` columns (both parts are folded into one).
   */
  select(rows: readonly number[], dropColumns: number): KvCache {
    const length = this.length - dropColumns;
    if (dropColumns < 0 || length < 0)
      throw new Error(`cannot drop ${dropColumns} of ${this.length} columns`);
    const tensors = this.tensors.map((t, i) =>
      gather([t, this.recent[i] as Tensor], rows, dropColumns, this.shape),
    );
    return new KvCache(tensors, emptyTensors(this.shape, rows.length), rows.length, this.shape);
  }
}

function checkPresent(present: readonly Tensor[], shape: KvShape): void {
  const first = present[0];
  if (!first || present.length !== 2 * shape.layers) {
    throw new Error(`expected ${2 * shape.layers} present tensors, got ${present.length}`);
  }
  const [, heads, , headDim] = first.dims;
  if (heads !== shape.kvHeads || headDim !== shape.headDim) {
    throw new Error(
      `present tensor shape [${first.dims.join(', ')}] disagrees with the manifest's ` +
        `kv heads ${shape.kvHeads} × head dim ${shape.headDim}`,
    );
  }
}
