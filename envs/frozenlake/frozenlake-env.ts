import { Rng } from '../rng.js';
import { FROZENLAKE_ACTION_NAMES } from '../protocol/action-vocabularies.js';
import type { EnvAction, Environment, GridSize, Position, StepOutcome } from '../types.js';
import { generateLakeMap } from './generator.js';
import { findTiles, parseLakeDesc, tileAt, type LakeMap } from './lake-map.js';
import { LAKE_GRID_VOCABULARY, parseLakeRender } from './lake-render.js';
import { LakeView } from './lake-view.js';
import { lakeOutcomes, slipDirection, type GymDirection, type LakeOutcome } from './transitions.js';
import { FROZENLAKE_4X4, type FrozenLakeConfig } from './variants.js';

/** Options for an env built from a fixed map instead of `reset(seed)`. */
export interface FixedLakeOptions {
  /** Default true (SPA's `is_slippery`). */
  readonly slippery?: boolean;
  /** Seed of the slip RNG (what `reset(seed)` would use); default 0. */
  readonly slipSeed?: number;
}

/**
 * Action names in id order: RAGEN `action_lookup {1:Left, 2:Down, 3:Right, 4:Up}`
 * (docs/spa-envs.md#frozenlake).
 */
const ACTION_NAMES = FROZENLAKE_ACTION_NAMES;

interface Episode {
  readonly map: LakeMap;
  /** The map's render tables (immutable, shared with clones). */
  readonly view: LakeView;
  player: Position;
  /** render()/describe() of the current state; cleared when the player moves. */
  rendered: string | null;
  described: string | null;
  /** Slip RNG: re-created from (seed, draws) on clone, since `Rng` has no copy operation. */
  rng: Rng;
  readonly slipSeed: number;
  draws: number;
}

/**
 * FrozenLake as SPA plays it (RAGEN `FrozenLakeEnv` over gymnasium, docs/spa-envs.md#frozenlake): random map
 * with S and G anywhere, slippery moves (intended or either perpendicular direction, 1/3 each),
 * entering a hole or the goal ends the episode, reward 1 (an int) on the goal else 0, no step cap.
 * Actions are ids 1..4 = Left, Down, Right, Up (gymnasium directions id − 1).
 */
export class FrozenLakeEnv implements Environment {
  readonly name = 'frozenlake' as const;
  /** The lake's rows × cols (the instruction's coordinate range, docs/spa-prompts.md#prefix). */
  get gridSize(): GridSize {
    return { rows: this.config.size, cols: this.config.size };
  }
  /** gymnasium ≥ 1.1 returns int rewards, so prompts print `0`/`1` (docs/spa-prompts.md#reward-text). */
  readonly rewardIsFloat = false;
  readonly actionNames: readonly string[] = ACTION_NAMES;
  readonly gridVocabulary = LAKE_GRID_VOCABULARY;
  readonly config: FrozenLakeConfig;
  private episode: Episode | null = null;

  constructor(config: FrozenLakeConfig = FROZENLAKE_4X4) {
    this.config = config;
  }

  /** An env on a fixed map given as gymnasium `desc` rows (`"SFFF"`, …); the player starts on S. */
  static fromDesc(desc: readonly string[], opts: FixedLakeOptions = {}): FrozenLakeEnv {
    const map = parseLakeDesc(desc);
    const env = new FrozenLakeEnv(fixedConfig(map, opts));
    env.begin(map, findTiles(map, 'S')[0] as Position, opts.slipSeed ?? 0);
    return env;
  }

  /** An env on the state shown by a render (`____\n_OOP\n…`); the player's cell becomes the start. */
  static fromRender(render: string, opts: FixedLakeOptions = {}): FrozenLakeEnv {
    const { map, player } = parseLakeRender(render);
    const env = new FrozenLakeEnv(fixedConfig(map, opts));
    env.begin(map, player, opts.slipSeed ?? 0);
    return env;
  }

  /** Case-insensitive whole-string match against Left/Down/Right/Up (docs/spa-protocol.md#actions). */
  lookupAction(text: string): EnvAction | undefined {
    const index = ACTION_NAMES.findIndex((name) => name.toLowerCase() === text.toLowerCase());
    return index < 0 ? undefined : index + 1;
  }

  /** Generate the map for `seed` and seed the slip RNG with the same seed (as RAGEN's reset does). */
  reset(seed: number): void {
    this.begin(generateLakeMap(this.config, seed), undefined, seed);
  }

  /**
   * Apply action id 1..4, sampling the slip as gymnasium does: one draw per step, even from a
   * hole or the goal (where the only outcome is to stay, reward 0, done). Same result as taking
   * `outcomes(action)[sampleOutcomeIndex(probabilities, u)]`, without building that list.
   */
  step(action: EnvAction): StepOutcome {
    const episode = this.current();
    const direction = toDirection(action);
    const u = this.draw();
    const { view } = episode;
    const cell = this.playerCell(episode);
    const here = view.tiles[cell];
    if (here === 'H' || here === 'G') {
      return { reward: 0, done: true, success: here === 'G', effective: false, valid: true };
    }
    const moved = this.config.slippery ? slipDirection(direction, u) : direction;
    const next = view.move(cell, moved);
    const tile = view.tiles[next];
    const effective = next !== cell;
    if (effective) {
      episode.player = { row: Math.floor(next / view.cols), col: next % view.cols };
      episode.rendered = null;
      episode.described = null;
    }
    const success = tile === 'G';
    return { reward: success ? 1 : 0, done: success || tile === 'H', success, effective, valid: true };
  }

  /**
   * Every outcome of `action` from the current state with its probability, in gymnasium's
   * sampling order (for tests, solvers and look-ahead); does not change the state.
   */
  outcomes(action: EnvAction): LakeOutcome[] {
    const episode = this.current();
    return lakeOutcomes(episode.map, episode.player, toDirection(action), this.config.slippery);
  }

  /** `renderLake` of the current state, cached until the player moves. */
  render(): string {
    const episode = this.current();
    episode.rendered ??= episode.view.render(this.playerCell(episode));
    return episode.rendered;
  }

  /** Our coordinate sentence (see `describeLake`; SPA's is unknown, docs/spa-prompts.md#states). */
  describe(): string {
    const episode = this.current();
    episode.described ??= episode.view.describe(this.playerCell(episode));
    return episode.described;
  }

  state(): string {
    return `${this.render()}\n${this.describe()}`;
  }

  /** Terminal once the player is in a hole or on the goal (no step cap, docs/spa-envs.md#manager). */
  isDone(): boolean {
    const { map, player } = this.current();
    const tile = tileAt(map, player);
    return tile === 'H' || tile === 'G';
  }

  /** RAGEN `info.success`: the player stands on G. */
  isSolved(): boolean {
    const { map, player } = this.current();
    return tileAt(map, player) === 'G';
  }

  /** The player's zero-indexed cell. */
  get player(): Position {
    return this.current().player;
  }

  /** The current map (gymnasium `desc` tiles). */
  get map(): LakeMap {
    return this.current().map;
  }

  /** A copy with the same map, position and slip-RNG state (future slips are identical). */
  clone(): FrozenLakeEnv {
    const copy = new FrozenLakeEnv(this.config);
    const episode = this.episode;
    if (episode !== null) {
      const rng = new Rng(episode.slipSeed);
      for (let i = 0; i < episode.draws; i++) rng.float();
      copy.episode = { ...episode, rng };
    }
    return copy;
  }

  private begin(map: LakeMap, player: Position | undefined, slipSeed: number): void {
    const start = player ?? (findTiles(map, 'S')[0] as Position);
    const view = new LakeView(map);
    this.episode = {
      map,
      view,
      player: start,
      rendered: null,
      described: null,
      rng: new Rng(slipSeed),
      slipSeed,
      draws: 0,
    };
    // gymnasium's reset draws once to pick the initial state among the S cells.
    this.draw();
  }

  private playerCell({ player, view }: Episode): number {
    return player.row * view.cols + player.col;
  }

  private draw(): number {
    const episode = this.current();
    episode.draws += 1;
    return episode.rng.float();
  }

  private current(): Episode {
    if (this.episode === null) {
      throw new Error('FrozenLakeEnv: no map loaded; call reset(seed) or use fromDesc/fromRender first');
    }
    return this.episode;
  }
}

function fixedConfig(map: LakeMap, opts: FixedLakeOptions): FrozenLakeConfig {
  return { ...FROZENLAKE_4X4, size: map.rows, slippery: opts.slippery ?? true };
}

function toDirection(action: EnvAction): GymDirection {
  if (typeof action !== 'number' || !Number.isInteger(action) || action < 1 || action > 4) {
    throw new Error(
      `FrozenLake action must be an id 1..4 (1 Left, 2 Down, 3 Right, 4 Up; see lookupAction), got ${JSON.stringify(action)}`,
    );
  }
  return (action - 1) as GymDirection;
}
