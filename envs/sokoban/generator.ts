import { Rng } from '../rng.js';
import { ReversePlay } from './reverse-play.js';
import { Cell, DIRECTIONS, type SokobanRoom } from './room.js';
import { solveSokoban } from './solver.js';
import type { SokobanVariant } from './variants.js';

/**
 * SPA's room generator (RAGEN `generate_room`, docs/spa-envs.md#sokoban-generator) on our seeded
 * {@link Rng}. Same seed ⇒ same room on every machine; not bit-exact with Python's
 * `random`/`np.random` streams (documented non-goal: the paper's puzzles ship as data).
 */

/** Options for {@link generateRoom}. */
export interface SokobanRoomOptions {
  /**
   * Reject rooms whose BFS shortest solution is longer (retry with the next derived seed),
   * since an episode cannot solve them within the per-trajectory budget. Default: the
   * variant's `maxActionsPerTraj` (10 for SPA's 6×6). `null` disables the filter (and the BFS).
   */
  readonly maxSolutionLength?: number | null;
  /** Derived seeds to try before giving up (default 1000). */
  readonly maxAttempts?: number;
}

/** A generated room plus how it was found. */
export interface GeneratedRoom {
  readonly room: SokobanRoom;
  /** The seed whose stream produced the room (`deriveSeed(seed, attempts - 1)`). */
  readonly usedSeed: number;
  /** Derived seeds consumed, including the successful one. */
  readonly attempts: number;
  /** Attempts that produced a room rejected by the solution-length filter. */
  readonly rejectedTooLong: number;
  /** BFS shortest solution length, or null when the filter was disabled. */
  readonly solutionLength: number | null;
}

/** gym_sokoban `room_topology_generation` masks: the 1s become floor around the walk position. */
const MASKS: readonly (readonly number[])[] = [
  [0, 0, 0, 1, 1, 1, 0, 0, 0],
  [0, 1, 0, 0, 1, 0, 0, 1, 0],
  [0, 0, 0, 1, 1, 0, 0, 1, 0],
  [0, 0, 0, 1, 1, 0, 1, 1, 0],
  [0, 0, 0, 0, 1, 1, 0, 1, 0],
];
/** The walk's directions in gym_sokoban's order. */
const WALK_DIRECTIONS: readonly (readonly [number, number])[] = [
  [1, 0],
  [0, 1],
  [-1, 0],
  [0, -1],
];
const P_CHANGE_DIRECTIONS = 0.35;
/** `generate_room(tries=4)`: topologies tried per seed before the RuntimeWarning retry. */
const TOPOLOGY_TRIES = 4;

/**
 * The seed for retry `attempt` of `seed` (attempt 0 is `seed` itself; `Rng` scrambles its
 * seed, so neighbouring seeds already give unrelated streams). Stands in for RAGEN's
 * `abs(hash(str(seed))) % 2**32` retry, which depends on PYTHONHASHSEED: murmur3's 32-bit
 * finalizer over seed and attempt, the same on every machine.
 */
export function deriveSeed(seed: number, attempt: number): number {
  if (attempt === 0) return seed;
  let h = (seed ^ Math.imul(attempt, 0x9e3779b9)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/** Step 1: random-walk floor plan; 1 = floor, 0 = wall, with a wall border. */
export function roomTopology(rng: Rng, rows: number, cols: number, numSteps: number): Uint8Array {
  const level = new Uint8Array(rows * cols);
  let direction = rng.pick(WALK_DIRECTIONS);
  let r = rng.int(1, rows - 1);
  let c = rng.int(1, cols - 1);
  for (let s = 0; s < numSteps; s++) {
    if (rng.chance(P_CHANGE_DIRECTIONS)) direction = rng.pick(WALK_DIRECTIONS);
    r = Math.max(Math.min(r + direction[0], rows - 2), 1);
    c = Math.max(Math.min(c + direction[1], cols - 2), 1);
    const mask = rng.pick(MASKS);
    for (let k = 0; k < 9; k++) {
      if (mask[k] === 1) level[(r - 1 + Math.floor(k / 3)) * cols + (c - 1 + (k % 3))] = 1;
    }
  }
  for (let i = 0; i < rows * cols; i++) {
    const rr = Math.floor(i / cols);
    const cc = i % cols;
    if (rr === 0 || cc === 0 || rr === rows - 1 || cc === cols - 1) level[i] = 0;
  }
  return level;
}

/** Step 2: player, then each target, on a uniformly random free floor cell; null if too little floor. */
function placePlayerAndTargets(
  rng: Rng,
  level: Uint8Array,
  numBoxes: number,
): { player: number; targets: Int32Array } | null {
  const free: number[] = [];
  level.forEach((code, i) => code === Cell.floor && free.push(i));
  if (free.length <= numBoxes + 1) return null; // RAGEN raises RuntimeError → seed retry
  const take = () => free.splice(rng.int(0, free.length - 1), 1)[0] as number;
  const player = take();
  const targets = Int32Array.from({ length: numBoxes }, take);
  return { player, targets };
}

/** Step 5: RAGEN `add_random_player_movement` (1–3 steps to unvisited floor/target cells). */
function addRandomPlayerMovement(rng: Rng, room: SokobanRoom, moveProbability: number): void {
  if (rng.float() > moveProbability) return;
  let player = room.state.indexOf(Cell.player);
  const visited = new Set<number>([player]);
  for (let steps = 0; steps < 3;) {
    const options: number[] = [];
    for (const [dr, dc] of DIRECTIONS) {
      const next = player + dr * room.cols + dc;
      const code = room.state[next];
      if ((code === Cell.floor || code === Cell.target) && !visited.has(next)) options.push(next);
    }
    if (options.length === 0) break;
    const next = rng.pick(options);
    room.state[player] = room.fixed[player] as number;
    room.state[next] = Cell.player;
    player = next;
    visited.add(next);
    steps++;
    if (steps >= 3 || rng.float() > 0.5) break;
  }
}

/** Steps 1–5 for one derived seed; null where RAGEN would raise and retry with a new seed. */
function generateOnce(rng: Rng, variant: SokobanVariant): SokobanRoom | null {
  const { rows, cols } = variant;
  for (let t = 0; t < TOPOLOGY_TRIES; t++) {
    const fixed = roomTopology(rng, rows, cols, variant.numGenSteps);
    const placed = placePlayerAndTargets(rng, fixed, variant.numBoxes);
    if (!placed) return null;
    for (const target of placed.targets) fixed[target] = Cell.target;
    const best = new ReversePlay(fixed, cols, placed.targets, placed.player).run(variant.searchDepth);
    if (best.displacement === 0) continue;
    const room = { rows, cols, fixed, state: best.state };
    addRandomPlayerMovement(rng, room, best.displacement === 1 ? 0.8 : 0.5);
    return room;
  }
  return null; // RAGEN: RuntimeWarning('Generated Model with score == 0') → seed retry
}

/**
 * Generate the room for `seed`: try derived seeds until one yields a room (and, with the
 * filter on, one whose shortest solution fits `maxSolutionLength`).
 */
export function generateRoom(
  seed: number,
  variant: SokobanVariant,
  options: SokobanRoomOptions = {},
): GeneratedRoom {
  const maxSolutionLength =
    options.maxSolutionLength === undefined ? variant.maxActionsPerTraj : options.maxSolutionLength;
  const maxAttempts = options.maxAttempts ?? 1000;
  let rejectedTooLong = 0;
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    const usedSeed = deriveSeed(seed, attempt);
    const room = generateOnce(new Rng(usedSeed), variant);
    if (!room) continue;
    if (maxSolutionLength === null) {
      return { room, usedSeed, attempts: attempt + 1, rejectedTooLong, solutionLength: null };
    }
    const solution = solveSokoban(room, { maxDepth: maxSolutionLength });
    if (solution) {
      return { room, usedSeed, attempts: attempt + 1, rejectedTooLong, solutionLength: solution.length };
    }
    rejectedTooLong++;
  }
  throw new Error(
    `generateRoom: no ${variant.name} room for seed ${seed} in ${maxAttempts} attempts ` +
      `(${rejectedTooLong} longer than maxSolutionLength ${maxSolutionLength}); raise maxAttempts or maxSolutionLength`,
  );
}
