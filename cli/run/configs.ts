import type { EnvName } from '../../envs/types.js';

/** The loop's knobs; SPA's full sizes are in the comments (reference §6, §8, §9, §10). */
export interface LoopConfig {
  readonly name: string;
  readonly env: EnvName;
  /** Policy that generates the world-model SFT data. */
  readonly generator: 'random' | 'oracle';
  /** SFT data: groups × group size × batches trajectories (SPA: 32 × 8 × 5 = 1280). */
  readonly sftGroups: number;
  readonly sftGroupSize: number;
  readonly sftBatches: number;
  /** SFT epochs (SPA: 5). */
  readonly sftEpochs: number;
  /** PPO: steps, each on groups × group size self-play episodes (SPA: 1000 steps of 32 × 8, top 25% kept). */
  readonly ppoSteps: number;
  readonly ppoGroups: number;
  readonly ppoGroupSize: number;
  /** Export + publish a new policy every N PPO steps. */
  readonly exportEvery: number;
  /** Generator admission control: records at most this many versions behind the trainer. */
  readonly maxStaleness: number;
  /** Evaluation: puzzles × k (SPA: 128 × 8). */
  readonly evalPuzzles: number;
  readonly evalK: number;
  /** Tokens per assistant turn for the ONNX policy (SPA: 400). */
  readonly maxNewTokens: number;
  /** `tiny` or a local Hugging Face folder. */
  readonly model: string;
}

const small = {
  generator: 'oracle',
  sftGroups: 16,
  sftGroupSize: 4,
  sftBatches: 2,
  sftEpochs: 3,
  ppoSteps: 3,
  ppoGroups: 4,
  ppoGroupSize: 4,
  exportEvery: 1,
  maxStaleness: 1,
  evalPuzzles: 32,
  evalK: 8,
  maxNewTokens: 400,
  model: 'tiny',
} as const;

/** SPA's config names (`SPA/run_spa.sh <CONFIG_NAME>`), at a small default size. */
export const LOOP_CONFIGS: Readonly<Record<string, LoopConfig>> = {
  _2_sokoban: { name: '_2_sokoban', env: 'sokoban', ...small },
  _3_frozen_lake: { name: '_3_frozen_lake', env: 'frozenlake', ...small },
  _10_sudoku: { name: '_10_sudoku', env: 'sudoku', ...small },
};

export function loopConfig(name: string): LoopConfig {
  const config = LOOP_CONFIGS[name];
  if (!config)
    throw new Error(`unknown config "${name}": expected one of ${Object.keys(LOOP_CONFIGS).join(', ')}`);
  return config;
}
