/** FrozenLake configuration (RAGEN `FrozenLakeEnvConfig` at `5eb79b8`, docs/spa-envs.md#frozenlake). */
export interface FrozenLakeConfig {
  /** Side length of the generated square map. */
  readonly size: number;
  /** Probability of a frozen tile (holes 1 − p). */
  readonly p: number;
  /** gymnasium `is_slippery`: the move goes sideways with probability 2/3. */
  readonly slippery: boolean;
}

/** SPA default: 4×4, p = 0.8, slippery (used for Qwen2.5-0.5B/1.5B and LLaMA-1B). */
export const FROZENLAKE_4X4: FrozenLakeConfig = { size: 4, p: 0.8, slippery: true };

/** The paper's 6×6 map for Qwen2.5-3B (same p and slipperiness). */
export const FROZENLAKE_6X6: FrozenLakeConfig = { size: 6, p: 0.8, slippery: true };

/** Variants by name, for CLIs and configs. */
export const FROZENLAKE_VARIANTS: Readonly<Record<'4x4' | '6x6', FrozenLakeConfig>> = {
  '4x4': FROZENLAKE_4X4,
  '6x6': FROZENLAKE_6X6,
};
