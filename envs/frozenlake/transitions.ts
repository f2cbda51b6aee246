import type { Position } from '../types.js';
import { tileAt, type LakeMap } from './lake-map.js';

/** gymnasium's FrozenLake directions: 0 = Left, 1 = Down, 2 = Right, 3 = Up. */
export type GymDirection = 0 | 1 | 2 | 3;

/** One possible result of an action, as an entry of gymnasium's `P[s][a]`. */
export interface LakeOutcome {
  readonly probability: number;
  /** The direction actually moved (after slipping). */
  readonly direction: GymDirection;
  readonly next: Position;
  /** 1 when `next` is the goal, else 0 (gymnasium ≥ 1.1 `reward_schedule=(1,0,0)`, ints). */
  readonly reward: 0 | 1;
  /** Entering a hole or the goal ends the episode. */
  readonly terminal: boolean;
}

/** gymnasium's default `success_rate` for the intended direction when slippery. */
const SUCCESS_RATE = 1.0 / 3.0;
/** `(1 - success_rate) / 2` for each perpendicular direction, as gymnasium computes it. */
const FAIL_RATE = (1.0 - SUCCESS_RATE) / 2.0;

/** gymnasium `_inc`: one cell in `direction`, clamped to the map (off-grid = stay). */
export function moveOnLake(map: LakeMap, pos: Position, direction: GymDirection): Position {
  switch (direction) {
    case 0:
      return { row: pos.row, col: Math.max(pos.col - 1, 0) };
    case 1:
      return { row: Math.min(pos.row + 1, map.rows - 1), col: pos.col };
    case 2:
      return { row: pos.row, col: Math.min(pos.col + 1, map.cols - 1) };
    case 3:
      return { row: Math.max(pos.row - 1, 0), col: pos.col };
  }
}

/**
 * gymnasium's transition list `P[s][a]` (docs/spa-envs.md#frozenlake). From a hole or the goal the only
 * outcome is to stay (probability 1, reward 0, terminal). Otherwise, when slippery, the player moves in
 * `(a−1)%4`, `a`, `(a+1)%4` in that order with probability 1/3 each; else in `a` with probability 1.
 */
export function lakeOutcomes(
  map: LakeMap,
  pos: Position,
  action: GymDirection,
  slippery: boolean,
): LakeOutcome[] {
  const here = tileAt(map, pos);
  if (here === 'H' || here === 'G') {
    return [{ probability: 1, direction: action, next: pos, reward: 0, terminal: true }];
  }
  const outcome = (probability: number, direction: GymDirection): LakeOutcome => {
    const next = moveOnLake(map, pos, direction);
    const tile = tileAt(map, next);
    return {
      probability,
      direction,
      next,
      reward: tile === 'G' ? 1 : 0,
      terminal: tile === 'G' || tile === 'H',
    };
  };
  if (!slippery) return [outcome(1, action)];
  const left = ((action + 3) % 4) as GymDirection;
  const right = ((action + 1) % 4) as GymDirection;
  return [
    outcome(SLIP_PROBABILITIES[0], left),
    outcome(SLIP_PROBABILITIES[1], action),
    outcome(SLIP_PROBABILITIES[2], right),
  ];
}

/** The slippery outcome probabilities in gymnasium's order `(a−1)%4, a, (a+1)%4`. */
const SLIP_PROBABILITIES: readonly [number, number, number] = [FAIL_RATE, SUCCESS_RATE, FAIL_RATE];

/**
 * The direction actually moved for intended `action` and uniform draw `u`, without building the
 * outcome list: the same `sampleOutcomeIndex` over the same probabilities as `lakeOutcomes`, so a
 * seeded run slips identically. Slippery only; from a hole or the goal nobody moves at all.
 */
export function slipDirection(action: GymDirection, u: number): GymDirection {
  // Index 0, 1, 2 is (a−1)%4, a, (a+1)%4, i.e. (a + 3 + index) % 4.
  return ((action + 3 + sampleOutcomeIndex(SLIP_PROBABILITIES, u)) % 4) as GymDirection;
}

/**
 * gymnasium `categorical_sample`: `argmax(cumsum(probs) > u)` for a uniform draw `u` in [0, 1),
 * i.e. the first index whose cumulative probability exceeds `u` (index 0 if none does, as argmax
 * of an all-false array is 0).
 */
export function sampleOutcomeIndex(probabilities: readonly number[], u: number): number {
  let cumulative = 0;
  for (let i = 0; i < probabilities.length; i++) {
    cumulative += probabilities[i] as number;
    if (cumulative > u) return i;
  }
  return 0;
}
