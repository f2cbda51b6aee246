import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EnvName } from './types.js';

/** One of the paper's puzzles, exactly as SPA's code generated it (envs/puzzles/SOURCE.md). */
export interface SpaPuzzle {
  readonly seed: number;
  readonly split: 'train' | 'val';
  /** Sokoban/FrozenLake: the initial render. */
  readonly render?: string;
  /** FrozenLake: the map rows (S/F/H/G). */
  readonly desc?: readonly string[];
  /** Sudoku: the puzzle board ("text" render). */
  readonly puzzle?: string;
  /** Sudoku: the solved board. */
  readonly solution?: string;
}

const PUZZLE_DIR = join(dirname(fileURLToPath(import.meta.url)), 'puzzles');
const FILES: Readonly<Record<EnvName, string>> = {
  sokoban: 'sokoban-6x6-1box.jsonl',
  frozenlake: 'frozenlake-4x4.jsonl',
  sudoku: 'sudoku-4x4.jsonl',
};

const cache = new Map<EnvName, ReadonlyMap<number, SpaPuzzle>>();

/** The SHA-256 the puzzle files were produced with (envs/puzzles/SHA256SUMS). */
function expectedChecksums(): Map<string, string> {
  const lines = readFileSync(join(PUZZLE_DIR, 'SHA256SUMS'), 'utf8').trim().split('\n');
  return new Map(lines.map((line) => line.split(/\s+/).reverse() as [string, string]));
}

/** All SPA puzzles of an env by seed; the file's checksum is verified before use. */
export function spaPuzzles(env: EnvName): ReadonlyMap<number, SpaPuzzle> {
  const cached = cache.get(env);
  if (cached) return cached;
  const file = FILES[env];
  const bytes = readFileSync(join(PUZZLE_DIR, file));
  const actual = createHash('sha256').update(bytes).digest('hex');
  const expected = expectedChecksums().get(file);
  if (actual !== expected) {
    throw new Error(
      `envs/puzzles/${file}: sha256 ${actual} does not match SHA256SUMS (${expected ?? 'missing'})`,
    );
  }
  const puzzles = new Map<number, SpaPuzzle>();
  for (const line of bytes.toString('utf8').split('\n')) {
    if (line.trim() === '') continue;
    const puzzle = JSON.parse(line) as SpaPuzzle;
    puzzles.set(puzzle.seed, puzzle);
  }
  cache.set(env, puzzles);
  return puzzles;
}

/** The SPA puzzle for `seed`, or a clear error naming the seeds that exist. */
export function spaPuzzle(env: EnvName, seed: number): SpaPuzzle {
  const puzzle = spaPuzzles(env).get(seed);
  if (!puzzle) {
    throw new Error(
      `no SPA ${env} puzzle for seed ${seed}: the paper's puzzles cover seeds 123..250 (val) and 10000..10255 (train)`,
    );
  }
  return puzzle;
}
