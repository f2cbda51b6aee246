import { Cell, DIRECTIONS } from './room.js';

/**
 * RAGEN `depth_first_search` stops once this many distinct states were explored
 * (docs/spa-envs.md#sokoban-generator).
 */
const MAX_EXPLORED_STATES = 300_000;

/** The best reverse-played state: room codes in gym's game encoding, box i's cell, score. */
export interface ReversePlayResult {
  readonly state: Uint8Array;
  readonly boxCells: Int32Array;
  readonly score: number;
  /** Σ Manhattan(box i, target i) of the best state (`box_displacement_score`). */
  readonly displacement: number;
}

/** Generation-time marker for a box that was pulled at least once (RAGEN writes 3 on pull). */
const PULLED_BOX = 3;
/** Generation-time marker for a box still where it started, on its target. */
const UNPULLED_BOX = 4;

/**
 * RAGEN's `reverse_playing` + recursive `depth_first_search` (docs/spa-envs.md#sokoban-generator): from the
 * solved room the player walks with the 4 pull actions (a box behind the player is always
 * pulled along); each newly seen state scores `box_swaps × Σ Manhattan(box, its target)`,
 * forced to 0 unless every target cell is empty; the first state with the highest score
 * wins. Hand-written with in-place moves and undo instead of array copies for speed; the
 * state key mirrors `marshal.dumps(room_state)`, including the pulled/unpulled box marker.
 */
export class ReversePlay {
  private readonly n: number;
  private readonly state: Uint8Array;
  private readonly boxAt: Int16Array;
  private readonly boxCells: Int32Array;
  private readonly explored = new Set<number>();
  private readonly keyScratch: number[];
  private player: number;
  private best: ReversePlayResult | undefined;

  /**
   * @param fixed room structure (0 wall, 1 floor, 2 target), row-major
   * @param targets target cells; box i starts on target i
   */
  constructor(
    private readonly fixed: Uint8Array,
    private readonly cols: number,
    private readonly targets: Int32Array,
    player: number,
  ) {
    this.n = fixed.length;
    this.state = fixed.slice();
    this.boxAt = new Int16Array(this.n);
    this.boxCells = targets.slice();
    targets.forEach((t, i) => {
      this.state[t] = UNPULLED_BOX;
      this.boxAt[t] = i + 1;
    });
    this.state[player] = Cell.player;
    this.player = player;
    this.keyScratch = new Array<number>(targets.length).fill(0);
  }

  /** Run the search with RAGEN's initial `ttl = search_depth`; returns the best state. */
  run(searchDepth: number): ReversePlayResult {
    this.dfs(0, -1, searchDepth);
    if (!this.best)
      throw new Error('ReversePlay.run: the start state was never scored (searchDepth must be ≥ 2)');
    return this.best;
  }

  private displacement(): number {
    let sum = 0;
    this.targets.forEach((t, i) => {
      const b = this.boxCells[i] as number;
      sum +=
        Math.abs(Math.floor(b / this.cols) - Math.floor(t / this.cols)) +
        Math.abs((b % this.cols) - (t % this.cols));
    });
    return sum;
  }

  private key(): number {
    // Boxes are indistinguishable in room_state, so sort; the marker bit keeps 3 vs 4 apart.
    const boxes = this.keyScratch;
    this.boxCells.forEach((b, i) => (boxes[i] = b * 2 + (this.state[b] === PULLED_BOX ? 1 : 0)));
    boxes.sort((a, b) => a - b);
    let key = 0;
    for (let i = boxes.length - 1; i >= 0; i--) key = key * 2 * this.n + (boxes[i] as number);
    return key * this.n + this.player;
  }

  private record(boxSwaps: number): void {
    let score = boxSwaps * this.displacement();
    for (const t of this.targets) if (this.state[t] !== Cell.target) score = 0;
    if (!this.best || score > this.best.score) {
      const state = this.state.slice();
      for (const b of this.boxCells) state[b] = Cell.box; // RAGEN: room_state[room_state == 3] = 4
      this.best = { state, boxCells: this.boxCells.slice(), score, displacement: this.displacement() };
    }
  }

  private dfs(boxSwaps: number, lastPull: number, ttlIn: number): void {
    const ttl = ttlIn - 1;
    if (ttl <= 0 || this.explored.size >= MAX_EXPLORED_STATES) return;
    const key = this.key();
    if (this.explored.has(key)) return;
    this.record(boxSwaps);
    this.explored.add(key);
    for (let d = 0; d < 4; d++) this.tryPull(d, boxSwaps, lastPull, ttl);
  }

  /** One pull action: move the player, drag a box from behind, recurse, undo. */
  private tryPull(d: number, boxSwaps: number, lastPull: number, ttl: number): void {
    const [dr, dc] = DIRECTIONS[d] as readonly [number, number];
    const from = this.player;
    const to = from + dr * this.cols + dc;
    const toCode = this.state[to] as number;
    // A blocked move leaves the state unchanged, which the child would find explored.
    if (toCode !== Cell.floor && toCode !== Cell.target) return;
    const behind = from - dr * this.cols - dc;
    const behindCode = this.state[behind] as number;
    const box =
      behindCode === PULLED_BOX || behindCode === UNPULLED_BOX ? (this.boxAt[behind] as number) - 1 : -1;
    this.state[from] = this.fixed[from] as number;
    this.state[to] = Cell.player;
    this.player = to;
    if (box >= 0) {
      this.state[from] = PULLED_BOX;
      this.state[behind] = this.fixed[behind] as number;
      this.boxAt[from] = box + 1;
      this.boxAt[behind] = 0;
      this.boxCells[box] = from;
    }
    const pulled = box >= 0 ? box : lastPull;
    this.dfs(pulled !== lastPull ? boxSwaps + 1 : boxSwaps, pulled, ttl);
    if (box >= 0) {
      this.boxCells[box] = behind;
      this.boxAt[behind] = box + 1;
      this.boxAt[from] = 0;
      this.state[behind] = behindCode;
    }
    this.state[to] = toCode;
    this.state[from] = Cell.player;
    this.player = from;
  }
}
