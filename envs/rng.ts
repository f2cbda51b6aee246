import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';

/**
 * A small seeded RNG facade over pure-rand's xoroshiro128+, so every generator draws the
 * same numbers on every machine. (Bit-exactness with CPython's MT19937 / NumPy's PCG64 is a
 * non-goal, docs/spa-envs.md#sokoban-generator: the paper's own puzzles ship as data in envs/puzzles.)
 */
export class Rng {
  private readonly generator: ReturnType<typeof xoroshiro128plus>;

  constructor(seed: number) {
    this.generator = xoroshiro128plus(scrambleSeed(seed));
  }

  /** Uniform integer in [min, max] (both inclusive). */
  int(min: number, max: number): number {
    return uniformInt(this.generator, min, max);
  }

  /** Uniform float in [0, 1). */
  float(): number {
    return uniformFloat64(this.generator);
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Rng.pick: empty list');
    return items[this.int(0, items.length - 1)] as T;
  }

  /** Fisher–Yates shuffle of a copy. */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(0, i);
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  }
}

/**
 * MurmurHash3's 32-bit finaliser (fmix32). xoroshiro128+ seeded with raw consecutive seeds
 * (SPA's group seeds are 10000 + g) starts with nearly identical draws (the first float is
 * ≈ 0.99999 for every small seed); scrambling first makes neighbouring streams unrelated.
 */
function scrambleSeed(seed: number): number {
  let h = seed | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
}

/**
 * The Rng of stream `stream` under `seed`: a policy with seed `seed` draws for one request from
 * its request's stream (policies/policy.ts, `PolicyRequest.stream`), so what it draws for
 * one trajectory does not depend on what else it is asked in the same call.
 */
export function streamRng(seed: number, stream: number): Rng {
  return new Rng(Math.imul(scrambleSeed(seed) ^ 0x9e3779b9, 0x85ebca6b) ^ stream);
}

/** FNV-1a over `text`'s UTF-16 code units: a stable 32-bit stream number for a name. */
export function streamOf(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h | 0;
}
