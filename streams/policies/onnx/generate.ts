/**
 * Batched incremental decoding with the KV cache. Prompts are left-padded to one length (mask 0
 * on the padding, positions counted from each row's first real token), run once (in chunks when
 * the logits would be large), then one token per step per unfinished row. A finished row is
 * dropped from the batch: its cache rows are sliced out, and so are leading columns that every
 * remaining row has as padding — so a long finished prompt stops costing attention.
 */
import type { Rng } from '../../../envs/internal/rng.js';
import type { ForwardOutput, OnnxCausalLm } from './causal-lm.js';
import type { KvCache } from './kv-cache.js';
import { sampleToken, type SamplingSettings } from './sampler.js';
import { StopDetector, type StopReason, type StopRule } from './stop-detector.js';

/** One row to continue: the prompt's token ids and the row's own sampling stream. */
export interface GenerationRequest {
  readonly promptIds: readonly number[];
  /**
   * Each row draws only from its own Rng, so a row's sample does not depend on which other
   * rows share the batch (batched = unbatched, up to float rounding of the logits).
   */
  readonly rng: Rng;
}

/** One row's result. */
export interface Generation {
  /** Generated ids that belong to the continuation (a stop id is excluded). */
  readonly ids: readonly number[];
  /** Decoded continuation, cut right after `</answer>` when present. */
  readonly text: string;
  readonly stopReason: StopReason;
  /** Forward calls of the batch this row was in (1 prefill chunk = 1 call). */
  readonly forwardCalls: number;
}

/** Options of `generateBatch`. */
export interface GenerateOptions {
  readonly sampling: SamplingSettings;
  readonly stop: StopRule;
  /**
   * Upper bound on logits floats per prefill call (`batch × chunk × vocab`). The graph returns
   * logits for every input position; with a 152k vocabulary a 600-token prompt of 8 rows would be
   * 2.9 GB, so long prompts go through the cache in chunks. Default 2^24 (64 MB).
   */
  readonly prefillLogitsBudget?: number;
  /** Input id written at padded positions (masked; any valid id). */
  readonly padId?: number;
}

interface Row {
  readonly index: number;
  readonly rng: Rng;
  readonly detector: StopDetector;
  /** Leading padded columns of this row in the current cache. */
  pad: number;
  /** Position id of this row's next token. */
  position: number;
}

/** Mask `[rows, columns]`: 0 for each row's first `pad` columns, 1 after. */
function attentionMask(rows: readonly Row[], columns: number): BigInt64Array {
  const mask = new BigInt64Array(rows.length * columns).fill(1n);
  rows.forEach((row, r) => mask.fill(0n, r * columns, r * columns + row.pad));
  return mask;
}

/** Runs the left-padded prompts through the model; returns the last chunk's output. */
async function prefill(
  lm: OnnxCausalLm,
  rows: readonly Row[],
  prompts: readonly (readonly number[])[],
  cache: KvCache,
  options: GenerateOptions,
): Promise<ForwardOutput & { calls: number }> {
  const batch = rows.length;
  const width = Math.max(...prompts.map((p) => p.length));
  const budget = options.prefillLogitsBudget ?? 2 ** 24;
  const chunk = Math.max(1, Math.floor(budget / (batch * lm.vocab)));
  const fullMask = attentionMask(rows, width);
  let out: ForwardOutput = { logits: new Float32Array(0), seq: 0, cache };
  let calls = 0;
  for (let start = 0; start < width; start += chunk) {
    const seq = Math.min(chunk, width - start);
    const inputIds = new BigInt64Array(batch * seq).fill(BigInt(options.padId ?? 0));
    const positionIds = new BigInt64Array(batch * seq).fill(1n); // HF fills padded positions with 1
    const attention = new BigInt64Array(batch * (start + seq));
    rows.forEach((row, r) => {
      const prompt = prompts[r] as readonly number[];
      for (let j = 0; j < seq; j++) {
        const column = start + j - row.pad;
        if (column < 0) continue;
        inputIds[r * seq + j] = BigInt(prompt[column] as number);
        positionIds[r * seq + j] = BigInt(column);
      }
      attention.set(fullMask.subarray(r * width, r * width + start + seq), r * (start + seq));
    });
    out = await lm.forward({ inputIds, attentionMask: attention, positionIds, batch, seq, past: out.cache });
    calls++;
  }
  return { ...out, calls };
}

/**
 * The decoding loop's int64 inputs, kept from step to step (no per-step allocation). Backing
 * arrays grow geometrically; each step passes views of exactly the needed length.
 */
class StepBuffers {
  private ids = new BigInt64Array(0);
  private positions = new BigInt64Array(0);
  private mask = new BigInt64Array(0);

  /** `[rows]` views for input ids and position ids, written by the caller. */
  rowViews(rows: number): { ids: BigInt64Array; positions: BigInt64Array } {
    if (this.ids.length < rows) {
      this.ids = new BigInt64Array(rows);
      this.positions = new BigInt64Array(rows);
    }
    return { ids: this.ids.subarray(0, rows), positions: this.positions.subarray(0, rows) };
  }

  /** The mask `[rows, columns]` (0 on each row's first `pad` columns, 1 after), as a view. */
  attention(rows: readonly Row[], columns: number): BigInt64Array {
    const size = rows.length * columns;
    if (this.mask.length < size) this.mask = new BigInt64Array(Math.max(size, 2 * this.mask.length));
    const mask = this.mask.subarray(0, size);
    mask.fill(1n);
    for (let r = 0; r < rows.length; r++) {
      const pad = (rows[r] as Row).pad;
      if (pad > 0) mask.fill(0n, r * columns, r * columns + pad);
    }
    return mask;
  }
}

/**
 * Samples each row's next id from the last position of `logits` (`[rows, seq, vocab]`) into
 * `next[r]`. Rows that stop get their result in `done`; returns how many rows go on, and writes
 * their indices, in order, to the front of `kept`.
 */
function advance(
  rows: readonly Row[],
  step: { logits: Float32Array; seq: number },
  vocab: number,
  options: GenerateOptions,
  done: (Generation | undefined)[],
  calls: number,
  kept: Int32Array,
  next: Int32Array,
): number {
  let count = 0;
  const { logits, seq } = step;
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r] as Row;
    const offset = (r * seq + seq - 1) * vocab;
    const id = sampleToken(logits, offset, vocab, options.sampling, row.rng);
    const reason = row.detector.push(id);
    if (reason) {
      const { detector } = row;
      done[row.index] = { ids: detector.ids, text: detector.text(), stopReason: reason, forwardCalls: calls };
    } else {
      kept[count] = r;
      next[count] = id;
      count++;
    }
  }
  return count;
}

/** One decoding step: each row's newest id (`next[r]`) on top of the cache. */
function decodeStep(
  lm: OnnxCausalLm,
  rows: readonly Row[],
  next: Int32Array,
  past: KvCache,
  buffers: StepBuffers,
) {
  const n = rows.length;
  const { ids, positions } = buffers.rowViews(n);
  for (let r = 0; r < n; r++) {
    const row = rows[r] as Row;
    ids[r] = BigInt(next[r] as number);
    positions[r] = BigInt(row.position++);
  }
  return lm.forward({
    inputIds: ids,
    attentionMask: buffers.attention(rows, past.length + 1),
    positionIds: positions,
    batch: n,
    seq: 1,
    past,
  });
}

/**
 * Continues every request until its stop rule ends it. Results are in request order.
 * Prompts may have different lengths; none may be empty.
 */
export async function generateBatch(
  lm: OnnxCausalLm,
  requests: readonly GenerationRequest[],
  options: GenerateOptions,
): Promise<Generation[]> {
  if (requests.length === 0) return [];
  requests.forEach((r, i) => {
    if (r.promptIds.length === 0) throw new Error(`request ${i} has an empty prompt: expected ≥ 1 token`);
  });
  const width = Math.max(...requests.map((r) => r.promptIds.length));
  let rows: Row[] = requests.map((r, index) => ({
    index,
    rng: r.rng,
    detector: new StopDetector(options.stop),
    pad: width - r.promptIds.length,
    position: r.promptIds.length,
  }));
  const done = new Array<Generation | undefined>(requests.length);
  const prompts = requests.map((r) => r.promptIds);
  const first = await prefill(lm, rows, prompts, lm.emptyCache(rows.length), options);
  let step: ForwardOutput = first;
  let calls = first.calls;
  const buffers = new StepBuffers();
  const kept = new Int32Array(rows.length);
  const next = new Int32Array(rows.length);
  for (;;) {
    const count = advance(rows, step, lm.vocab, options, done, calls, kept, next);
    if (count === 0) break;
    let cache = step.cache;
    if (count < rows.length) {
      const keptRows = Array.from(kept.subarray(0, count));
      rows = keptRows.map((r) => rows[r] as Row);
      const drop = Math.min(...rows.map((row) => row.pad));
      rows.forEach((row) => (row.pad -= drop));
      cache = cache.select(keptRows, drop);
    }
    step = await decodeStep(lm, rows, next, cache, buffers);
    calls++;
  }
  return done.map((g, i) => {
    if (!g) throw new Error(`internal: request ${i} finished without a result`);
    return g;
  });
}
