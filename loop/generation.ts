/**
 * How every ONNX policy of the loop generates (self-play v0, the PPO generator, evaluation), as
 * the options an in-process policy takes and as the flags of a `spa generate` process.
 */
import type { LoopConfig } from './configs.js';

/** The generation options of `resolvePolicy` / `onnxPolicy` for the run's ONNX policies. */
export function generationOptions(config: LoopConfig) {
  return {
    maxNewTokens: config.maxNewTokens,
    stopAtAnswer: config.stopAtAnswer,
    // 0 = the whole prompt (LoopConfig.contextWindow)
    contextWindow: config.contextWindow > 0 ? config.contextWindow : undefined,
    executionProvider: config.device,
  };
}

/** `spa generate`'s flags for ONNX policy `spec` generating as {@link generationOptions} says. */
export function onnxPolicyFlags(config: LoopConfig, spec: string, seed: number): string[] {
  return [
    ...['--policy', spec, '--policy-seed', String(seed), '--device', config.device],
    ...['--max-new-tokens', String(config.maxNewTokens)],
    ...(config.stopAtAnswer ? ['--stop-at-answer'] : []),
    ...(config.contextWindow > 0 ? ['--context-window', String(config.contextWindow)] : []),
  ];
}
