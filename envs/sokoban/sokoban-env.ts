import type { GridSize, EnvAction, Environment, Position, StepOutcome } from '../types.js';
import { generateRoom } from './generator.js';
import {
  Cell,
  DIRECTIONS,
  GRID_VOCABULARY,
  copyRoom,
  describeRoom,
  isBox,
  isWalkable,
  parseRender,
  renderRoom,
  type SokobanRoom,
} from './room.js';
import { SOKOBAN_ACTION_NAMES } from './solver.js';
import { SPA_SOKOBAN, type SokobanVariant } from './variants.js';

/** gym_sokoban's reward constants (`SokobanEnv.__init__`, docs/spa-envs.md#sokoban). */
const PENALTY_FOR_STEP = -0.1;
const REWARD_BOX_ON_TARGET = 1;
const PENALTY_BOX_OFF_TARGET = -1;
const REWARD_FINISHED = 10;

/** Mutable board: the room arrays plus gym_sokoban's counters. */
interface Board {
  readonly room: SokobanRoom;
  player: number;
  numEnvSteps: number;
  boxesOnTarget: number;
  readonly numBoxes: number;
  /** render()/describe() of the current state; cleared whenever a cell changes. */
  rendered: string | null;
  described: string | null;
}

/**
 * SPA's Sokoban (`SimpleSokoban`): RAGEN's `SokobanEnv` over gym_sokoban's push-or-move
 * rules and rewards (docs/spa-envs.md#sokoban), with the `text_with_coordinates` state of
 * docs/spa-prompts.md#states.
 *
 * `describe()` follows our choice for the unknown `S`/`√` cases (docs/spa-prompts.md#states): positions
 * come from the state arrays (player = `P`/`S`; boxes = `X`/`√`; targets = `O`/`√`/`S`),
 * one clause per item in row-major order, in the same sentence template.
 */
export class SokobanEnv implements Environment {
  readonly name = 'sokoban' as const;
  /** Rows × cols of this variant (the instruction's coordinate range, docs/spa-prompts.md#prefix). */
  get gridSize(): GridSize {
    return { rows: this.config.rows, cols: this.config.cols };
  }
  readonly rewardIsFloat = true;
  readonly actionNames: readonly string[] = SOKOBAN_ACTION_NAMES;
  readonly gridVocabulary: string = GRID_VOCABULARY;
  private board: Board | undefined;

  constructor(readonly config: SokobanVariant = SPA_SOKOBAN) {}

  /**
   * Load a state from its text render (step counter 0). `boxesOnTarget` starts at the count
   * of `√` cells, so pushing a box off a target costs −1 (docs/spa-testvectors.md#sokoban); gym's
   * reset would start at 0, which only differs for boards that start with a box on a target.
   */
  static fromRender(render: string, config: SokobanVariant = SPA_SOKOBAN): SokobanEnv {
    const env = new SokobanEnv(config);
    env.load(parseRender(render));
    return env;
  }

  /** SPA's lookup: case-insensitive whole-string match; no trimming (the parser strips). */
  lookupAction(text: string): EnvAction | undefined {
    const lower = text.toLowerCase();
    const index = SOKOBAN_ACTION_NAMES.findIndex((name) => name.toLowerCase() === lower);
    return index >= 0 ? index + 1 : undefined;
  }

  /** Generate the room for `seed` with this variant's generator and load it. */
  reset(seed: number): void {
    this.load(generateRoom(seed, this.config).room);
  }

  /**
   * gym_sokoban `step`: push-or-move, then `_calc_reward` and `_check_if_done`. Like gym it
   * does not refuse a terminal board (docs/spa-testvectors.md#sokoban steps a solved one); `done` is
   * `solved || num_env_steps >= max_steps` (gym's `==`, identical until a caller oversteps).
   */
  step(action: EnvAction): StepOutcome {
    const board = this.requireBoard();
    if (typeof action !== 'number' || !Number.isInteger(action) || action < 1 || action > 4) {
      throw new Error(
        `SokobanEnv.step: action ${JSON.stringify(action)} is not an action id 1..4 (Up, Down, Left, Right)`,
      );
    }
    board.numEnvSteps += 1;
    const before = board.player;
    // Counted incrementally (a push moves at most one box): the same count of √ cells as a scan.
    const onTarget = board.boxesOnTarget + pushOrMove(board, action - 1);
    // Reward sums are accumulated in gym's order so IEEE results equal Python's (10.9, −1.1).
    let reward = PENALTY_FOR_STEP;
    if (onTarget > board.boxesOnTarget) reward += REWARD_BOX_ON_TARGET;
    else if (onTarget < board.boxesOnTarget) reward += PENALTY_BOX_OFF_TARGET;
    const success = onTarget === board.numBoxes;
    if (success) reward += REWARD_FINISHED;
    board.boxesOnTarget = onTarget;
    const done = success || board.numEnvSteps >= this.config.maxSteps;
    return { reward, done, success, effective: board.player !== before, valid: true };
  }

  /** Grid render with `# _ O √ X P S`, rows joined by `\n` (cached until the board changes). */
  render(): string {
    const board = this.requireBoard();
    board.rendered ??= renderRoom(board.room);
    return board.rendered;
  }

  /** `Player (P) is at (r,c); box (X) is at (r,c); target (O) is at (r,c).` (see class doc). */
  describe(): string {
    const board = this.requireBoard();
    board.described ??= describeRoom(board.room);
    return board.described;
  }

  /** The `text_with_coordinates` observation. */
  state(): string {
    return `${this.render()}\n${this.describe()}`;
  }

  /** Solved, or the step cap `max_steps` reached. */
  isDone(): boolean {
    const board = this.requireBoard();
    return board.boxesOnTarget === board.numBoxes || board.numEnvSteps >= this.config.maxSteps;
  }

  /** An independent copy, counters included. */
  clone(): SokobanEnv {
    const copy = new SokobanEnv(this.config);
    const board = this.requireBoard();
    copy.board = { ...board, room: copyRoom(board.room) };
    return copy;
  }

  /** A copy of the current board (for solvers, oracles and tests). */
  snapshot(): SokobanRoom {
    return copyRoom(this.requireBoard().room);
  }

  /** Zero-indexed player position. */
  playerPosition(): Position {
    const { player, room } = this.requireBoard();
    return { row: Math.floor(player / room.cols), col: player % room.cols };
  }

  /** gym's `num_env_steps`. */
  get numEnvSteps(): number {
    return this.requireBoard().numEnvSteps;
  }

  private load(room: SokobanRoom): void {
    let numBoxes = 0;
    for (const code of room.state) if (isBox(code)) numBoxes++;
    this.board = {
      room,
      player: room.state.indexOf(Cell.player),
      numEnvSteps: 0,
      boxesOnTarget: countBoxesOnTarget(room),
      numBoxes,
      rendered: null,
      described: null,
    };
  }

  private requireBoard(): Board {
    if (!this.board)
      throw new Error('SokobanEnv: no room loaded; call reset(seed) or SokobanEnv.fromRender first');
    return this.board;
  }
}

function countBoxesOnTarget(room: SokobanRoom): number {
  let count = 0;
  for (const code of room.state) if (code === Cell.boxOnTarget) count++;
  return count;
}

function inside(room: SokobanRoom, r: number, c: number): boolean {
  return r >= 0 && r < room.rows && c >= 0 && c < room.cols;
}

/**
 * gym_sokoban `_push` falling back to `_move`; off-grid cells count as walls. Returns the change
 * in the number of boxes on targets (−1, 0 or +1) and clears the board's cached texts when
 * anything moved.
 */
function pushOrMove(board: Board, direction: number): number {
  const { room } = board;
  const { cols, fixed, state } = room;
  const [dr, dc] = DIRECTIONS[direction] as readonly [number, number];
  const r = Math.floor(board.player / cols) + dr;
  const c = (board.player % cols) + dc;
  if (!inside(room, r, c)) return 0;
  const to = r * cols + c;
  const beyond = (r + dr) * cols + (c + dc);
  let onTargetDelta = 0;
  if (isBox(state[to]) && inside(room, r + dr, c + dc) && isWalkable(state[beyond])) {
    const landsOnTarget = fixed[beyond] === Cell.target;
    state[beyond] = landsOnTarget ? Cell.boxOnTarget : Cell.box;
    onTargetDelta = (landsOnTarget ? 1 : 0) - (state[to] === Cell.boxOnTarget ? 1 : 0);
  } else if (!isWalkable(state[to])) {
    return 0;
  }
  state[board.player] = fixed[board.player] as number;
  state[to] = Cell.player;
  board.player = to;
  board.rendered = null;
  board.described = null;
  return onTargetDelta;
}
