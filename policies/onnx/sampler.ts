/**
 * Next-token choice from one row of logits: greedy at temperature 0, otherwise softmax at the
 * temperature, restricted to the top-p nucleus (docs/spa-prompts.md#sampling: SPA samples at temperature 1,
 * top_p 1, top_k −1). Hand-written because it is a dozen lines over a Float32Array and must
 * draw from our seeded `Rng` so runs are reproducible.
 */
import type { Rng } from '../../envs/rng.js';

/** Sampling settings (vLLM's `temperature`, `top_p`). */
export interface SamplingSettings {
  /** 0 = greedy (argmax); otherwise > 0. */
  readonly temperature: number;
  /** Nucleus mass in (0, 1]; 1 keeps the whole vocabulary. */
  readonly topP: number;
}

/** Checks settings coming from a user; names the bad one. */
export function checkSampling(settings: SamplingSettings): SamplingSettings {
  const { temperature, topP } = settings;
  if (!Number.isFinite(temperature) || temperature < 0) {
    throw new Error(`temperature ${temperature}: expected ≥ 0 (0 = greedy; SPA uses 1)`);
  }
  if (!Number.isFinite(topP) || topP <= 0 || topP > 1) {
    throw new Error(`topP ${topP}: expected a number in (0, 1] (SPA uses 1)`);
  }
  return settings;
}

/** Index of the largest logit in `logits[offset, offset + vocab)`; the first one on ties (as torch.argmax). */
export function argmax(logits: Float32Array, offset: number, vocab: number): number {
  let best = 0;
  let bestValue = -Infinity;
  for (let i = 0; i < vocab; i++) {
    const v = logits[offset + i] as number;
    if (v > bestValue) {
      bestValue = v;
      best = i;
    }
  }
  return best;
}

/**
 * Unnormalised softmax weights of `logits[offset…]` at `temperature` (max-subtracted, so no
 * overflow), and their sum.
 */
export function softmaxWeights(
  logits: Float32Array,
  offset: number,
  vocab: number,
  temperature: number,
): { weights: Float64Array; total: number } {
  let max = -Infinity;
  for (let i = 0; i < vocab; i++) max = Math.max(max, logits[offset + i] as number);
  const weights = new Float64Array(vocab);
  let total = 0;
  for (let i = 0; i < vocab; i++) {
    const w = Math.exp(((logits[offset + i] as number) - max) / temperature);
    weights[i] = w;
    total += w;
  }
  return { weights, total };
}

/**
 * The top-p nucleus: token ids by decreasing probability, keeping each token whose
 * higher-probability predecessors hold less than `topP` of the mass (so at least one token,
 * as HF's `TopPLogitsWarper` and vLLM).
 */
export function nucleus(weights: Float64Array, total: number, topP: number): number[] {
  const order = Array.from(weights.keys()).sort((a, b) => (weights[b] as number) - (weights[a] as number));
  const kept: number[] = [];
  let before = 0;
  for (const id of order) {
    if (kept.length > 0 && before >= topP * total) break;
    kept.push(id);
    before += weights[id] as number;
  }
  return kept;
}

/** Draws an index from `ids` with probability ∝ `weights[id]`, using one uniform draw of `rng`. */
function draw(ids: Iterable<number>, weights: Float64Array, mass: number, rng: Rng): number {
  let threshold = rng.float() * mass;
  let last = -1;
  for (const id of ids) {
    const w = weights[id] as number;
    if (w <= 0) continue;
    last = id;
    threshold -= w;
    if (threshold < 0) return id;
  }
  return last; // rounding left a sliver of mass: the last positive-weight token takes it
}

/** The next token of one row: `logits[offset, offset + vocab)` → token id. */
export function sampleToken(
  logits: Float32Array,
  offset: number,
  vocab: number,
  settings: SamplingSettings,
  rng: Rng,
): number {
  if (settings.temperature === 0) return argmax(logits, offset, vocab);
  const { weights, total } = softmaxWeights(logits, offset, vocab, settings.temperature);
  if (settings.topP >= 1) return draw(weights.keys(), weights, total, rng);
  const kept = nucleus(weights, total, settings.topP);
  const mass = kept.reduce((sum, id) => sum + (weights[id] as number), 0);
  return draw(kept, weights, mass, rng);
}
