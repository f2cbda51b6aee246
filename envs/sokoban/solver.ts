import { Cell, DIRECTIONS, isBox, type SokobanRoom } from './room.js';

import { SOKOBAN_ACTION_NAMES } from '../protocol/action-vocabularies.js';

/** Action names in env id order (id = index + 1), docs/spa-envs.md#sokoban. */
export { SOKOBAN_ACTION_NAMES };

/** Limits for {@link solveSokoban}. */
export interface SolveOptions {
  /** Longest solution searched for (RAGEN's `MAX_DEPTH`, default 100). */
  readonly maxDepth?: number;
  /** Give up (return null) after this many distinct states (default 2 000 000). */
  readonly maxStates?: number;
}

/**
 * The board reduced to what a push search needs: walls, targets and a numeric state key
 * `player + n·(box₀ + n·(box₁ + …))` over sorted box cells, so the visited set holds plain
 * numbers instead of copied grids (hand-written because no npm Sokoban solver fits this API).
 */
class PushSearch {
  readonly n: number;
  readonly wall: Uint8Array;
  readonly target: Uint8Array;
  readonly boxes: Int32Array;

  constructor(readonly room: SokobanRoom) {
    this.n = room.rows * room.cols;
    this.wall = new Uint8Array(this.n);
    this.target = new Uint8Array(this.n);
    const boxes: number[] = [];
    for (let i = 0; i < this.n; i++) {
      this.wall[i] = room.fixed[i] === Cell.wall ? 1 : 0;
      this.target[i] = room.fixed[i] === Cell.target ? 1 : 0;
      if (isBox(room.state[i])) boxes.push(i);
    }
    this.boxes = Int32Array.from(boxes);
    if (this.n ** (boxes.length + 1) > Number.MAX_SAFE_INTEGER) {
      throw new Error(`solveSokoban: ${boxes.length} boxes on ${this.n} cells exceed the numeric state key`);
    }
  }

  encode(player: number, boxes: Int32Array): number {
    let key = 0;
    for (let i = boxes.length - 1; i >= 0; i--) key = key * this.n + (boxes[i] as number);
    return key * this.n + player;
  }

  /** Fills `boxes` (sorted) and returns the player cell. */
  decode(key: number, boxes: Int32Array): number {
    const player = key % this.n;
    let rest = (key - player) / this.n;
    for (let i = 0; i < boxes.length; i++) {
      const b = rest % this.n;
      boxes[i] = b;
      rest = (rest - b) / this.n;
    }
    return player;
  }

  solved(boxes: Int32Array): boolean {
    for (const b of boxes) if (this.target[b] === 0) return false;
    return true;
  }

  /**
   * The key after moving the player from `player` in direction `d` (gym push-or-move), or
   * -1 when blocked. `scratch` receives the new sorted box cells.
   */
  next(player: number, boxes: Int32Array, d: number, scratch: Int32Array): number {
    const { rows, cols } = this.room;
    const [dr, dc] = DIRECTIONS[d] as readonly [number, number];
    const r = Math.floor(player / cols) + dr;
    const c = (player % cols) + dc;
    if (r < 0 || r >= rows || c < 0 || c >= cols) return -1;
    const to = r * cols + c;
    if (this.wall[to] === 1) return -1;
    scratch.set(boxes);
    const pushed = boxes.indexOf(to);
    if (pushed >= 0) {
      const br = r + dr;
      const bc = c + dc;
      if (br < 0 || br >= rows || bc < 0 || bc >= cols) return -1;
      const boxTo = br * cols + bc;
      if (this.wall[boxTo] === 1 || boxes.includes(boxTo)) return -1;
      scratch[pushed] = boxTo;
      scratch.sort();
    }
    return this.encode(to, scratch);
  }
}

/**
 * Breadth-first search for a shortest action sequence that puts every box on a target,
 * like RAGEN's `get_shortest_action_path` (same move order Up, Down, Left, Right, so the
 * same first-found path). Returns action names (`[]` if already solved), or null when no
 * solution of length ≤ `maxDepth` exists or the state cap is hit.
 */
export function solveSokoban(room: SokobanRoom, options: SolveOptions = {}): string[] | null {
  const maxDepth = options.maxDepth ?? 100;
  const maxStates = options.maxStates ?? 2_000_000;
  const search = new PushSearch(room);
  const boxes = search.boxes.slice().sort();
  if (search.solved(boxes)) return [];
  const scratch = new Int32Array(boxes.length);
  const start = search.encode(room.state.indexOf(Cell.player), boxes);
  const keys: number[] = [start];
  const parents: number[] = [-1];
  const moves: number[] = [-1];
  const seen = new Set<number>([start]);
  let levelStart = 0;
  for (let depth = 0; depth < maxDepth && levelStart < keys.length; depth++) {
    const levelEnd = keys.length;
    for (let at = levelStart; at < levelEnd; at++) {
      const player = search.decode(keys[at] as number, boxes);
      for (let d = 0; d < 4; d++) {
        const key = search.next(player, boxes, d, scratch);
        if (key < 0 || seen.has(key)) continue;
        seen.add(key);
        keys.push(key);
        parents.push(at);
        moves.push(d);
        if (search.solved(scratch)) return backtrack(parents, moves, keys.length - 1);
        if (seen.size >= maxStates) return null;
      }
    }
    levelStart = levelEnd;
  }
  return null;
}

function backtrack(parents: readonly number[], moves: readonly number[], at: number): string[] {
  const path: string[] = [];
  for (let i = at; (parents[i] ?? -1) >= 0; i = parents[i] as number) {
    path.push(SOKOBAN_ACTION_NAMES[moves[i] as number] as string);
  }
  return path.reverse();
}
