/**
 * Sokoban configurations. `6x6-1box` is SPA's `SimpleSokoban` (docs/spa-envs.md#manager, #sokoban);
 * the larger ones are ours for scaling experiments (SPA uses no other Sokoban
 * config, grid vocabulary or action vocabulary).
 */

/** Everything `reset`, `step` and the generator need to know about one Sokoban family. */
export interface SokobanVariant {
  readonly name: SokobanVariantName;
  /** `dim_room` as (rows, cols). */
  readonly rows: number;
  readonly cols: number;
  readonly numBoxes: number;
  /** gym_sokoban's internal step cap: `done` when `num_env_steps == max_steps`. */
  readonly maxSteps: number;
  /** Reverse-play DFS time-to-live (`search_depth`). */
  readonly searchDepth: number;
  /** Random-walk length of the topology generator: gym_sokoban's `int(1.7 * (w + h))`. */
  readonly numGenSteps: number;
  /** Per-trajectory action budget (`max_actions_per_traj`); the generator's default solution-length cap. */
  readonly maxActionsPerTraj: number;
}

/** The names accepted by {@link sokobanVariant}. */
export type SokobanVariantName = '6x6-1box' | '8x8-2box' | '10x10-2box';

/** gym_sokoban's default walk length for a `rows × cols` room. */
function defaultNumGenSteps(rows: number, cols: number): number {
  // Python int() truncates toward zero; the float product is computed exactly as in Python.
  return Math.trunc(1.7 * (rows + cols));
}

function variant(
  name: SokobanVariantName,
  size: number,
  numBoxes: number,
  maxActionsPerTraj: number,
): SokobanVariant {
  return {
    name,
    rows: size,
    cols: size,
    numBoxes,
    maxSteps: 100,
    searchDepth: 300,
    numGenSteps: defaultNumGenSteps(size, size),
    maxActionsPerTraj,
  };
}

/**
 * All variants. 6x6-1box = SPA `SimpleSokoban` (max_steps 100, search_depth 300,
 * num_gen_steps 20, max_actions_per_traj 10). The 2-box budgets (20, 30) are our choice:
 * SPA defines none, and 10 actions would reject most 2-box rooms.
 */
export const SOKOBAN_VARIANTS: Readonly<Record<SokobanVariantName, SokobanVariant>> = {
  '6x6-1box': variant('6x6-1box', 6, 1, 10),
  '8x8-2box': variant('8x8-2box', 8, 2, 20),
  '10x10-2box': variant('10x10-2box', 10, 2, 30),
};

/** SPA's Sokoban configuration. */
export const SPA_SOKOBAN: SokobanVariant = SOKOBAN_VARIANTS['6x6-1box'];

/** Look a variant up by name; throws listing the valid names. */
export function sokobanVariant(name: string): SokobanVariant {
  const found = (SOKOBAN_VARIANTS as Record<string, SokobanVariant | undefined>)[name];
  if (!found) {
    throw new Error(
      `unknown Sokoban variant ${JSON.stringify(name)}; expected one of ${Object.keys(SOKOBAN_VARIANTS).join(', ')}`,
    );
  }
  return found;
}
