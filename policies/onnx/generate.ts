/**
 * Batched incremental decoding with the KV cache. Prompts are left-padded to one length (mask 0
 * on the padding, positions counted from each row's first real token), run once (in chunks of at
 * most `prefillTokenBudget` tokens), then one token per step per unfinished row. A finished row is
 * dropped from the batch: its cache rows are sliced out, and so are leading columns that every
 * remaining row has as padding — so a long finished prompt stops costing attention.
 */
import type { Rng } from '../../envs/rng.js';
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

/** How `generateBatch` decodes: sampling, stop rule and prefill budget. */
export interface DecodeOptions {
  readonly sampling: SamplingSettings;
  readonly stop: StopRule;
  /**
   * Upper bound on prompt tokens per prefill call (`batch × chunk`), which bounds the
   * activations a call holds (a 1.5B model's MLP alone is 36 KB per token). Default 2^14.
   */
  readonly prefillTokenBudget?: number;
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
  options: DecodeOptions,
): Promise<ForwardOutput & { calls: number }> {
  const batch = rows.length;
  const width = Math.max(...prompts.map((p) => p.length));
  const chunk = Math.max(1, Math.floor((options.prefillTokenBudget ?? 2 ** 14) / batch));
  const fullMask = attentionMask(rows, width);
  let out: ForwardOutput = { logits: new Float32Array(0), cache };
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
 * Samples each row's next id from `logits` (`[rows, vocab]`, each row's last position). Rows
 * that stop get their result in `done`; returns the indices of the rows that go on and their ids.
 */
function advance(
  rows: readonly Row[],
  logits: Float32Array,
  vocab: number,
  options: DecodeOptions,
  done: (Generation | undefined)[],
  calls: number,
): { kept: number[]; next: number[] } {
  const kept: number[] = [];
  const next: number[] = [];
  rows.forEach((row, r) => {
    const id = sampleToken(logits, r * vocab, vocab, options.sampling, row.rng);
    const reason = row.detector.push(id);
    if (reason) {
      const { detector } = row;
      done[row.index] = { ids: detector.ids, text: detector.text(), stopReason: reason, forwardCalls: calls };
    } else {
      kept.push(r);
      next.push(id);
    }
  });
  return { kept, next };
}

/** One decoding step: each row's newest id on top of the cache. */
function decodeStep(lm: OnnxCausalLm, rows: readonly Row[], next: readonly number[], past: KvCache) {
  return lm.forward({
    inputIds: BigInt64Array.from(next, BigInt),
    attentionMask: attentionMask(rows, past.length + 1),
    positionIds: BigInt64Array.from(rows, (row) => BigInt(row.position++)),
    batch: rows.length,
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
  options: DecodeOptions,
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
  for (;;) {
    const { kept, next } = advance(rows, step.logits, lm.vocab, options, done, calls);
    if (kept.length === 0) break;
    let cache = step.cache;
    if (kept.length < rows.length) {
      rows = kept.map((r) => rows[r] as Row);
      const drop = Math.min(...rows.map((row) => row.pad));
      rows.forEach((row) => (row.pad -= drop));
      cache = cache.select(kept, drop);
    }
    step = await decodeStep(lm, rows, next, cache);
    calls++;
  }
  return done.map((g, i) => {
    if (!g) throw new Error(`internal: request ${i} finished without a result`);
    return g;
  });
}
