import { Rng } from '../internal/rng.js';

/**
 * The shared `Rng` seeds xoroshiro128+ with the raw seed, so neighbouring seeds (SPA's puzzle
 * seeds are consecutive: 10000 + group) give nearly identical early draws (the first float is
 * ≈ 0.99999 for every small seed). Scrambling the seed with MurmurHash3's 32-bit finaliser
 * (fmix32) first makes their streams unrelated. Same as `envs/frozenlake/seeding.ts`; it belongs in
 * `envs/internal/rng.ts` (not ours to change mid-sprint; reported).
 */
export function rngForSeed(seed: number): Rng {
  let h = seed | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return new Rng(h);
}
