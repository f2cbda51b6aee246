/**
 * The `--policy` values that need nothing beyond policies/: a built-in (random, oracle) or an
 * ONNX artifact folder. streams/policies/resolve.ts adds `latest`, which follows the policy topic.
 */
import type { PromptMode } from '../envs/protocol/index.js';
import { BUILTIN_POLICIES, builtinPolicy, type BuiltinPolicyName } from './builtin.js';
import { onnxPolicy, type OnnxPolicy } from './onnx/index.js';
import type { PolicySource } from './policy.js';

/** A resolved `--policy` value: the source for the episode loop and how to release it. */
export interface LocalPolicy {
  readonly source: PolicySource;
  readonly describe: string;
  close(): Promise<void>;
}

/** How a `--policy` value is built; the sampling settings apply to ONNX policies. */
export interface PolicySpecOptions {
  readonly mode: PromptMode;
  readonly seed?: number;
  readonly temperature?: number;
  /** Built-in policies: actions a turn (the random policy's count, the oracle's most; builtin.ts). */
  readonly actionsPerTurn?: number;
  /** Token cap per assistant turn for ONNX policies (SPA: 400). */
  readonly maxNewTokens?: number;
  /** ONNX policies: also end a turn at `</answer>` (not SPA). */
  readonly stopAtAnswer?: boolean;
  /** ONNX policies: tokens the model attends to (`OnnxPolicyOptions.contextWindow`). */
  readonly contextWindow?: number;
  /** onnxruntime execution provider for ONNX policies. Default cpu. */
  readonly executionProvider?: 'cpu' | 'cuda';
}

/** The local `--policy` values, for help texts. */
export const LOCAL_POLICY_SPEC_HELP = `${BUILTIN_POLICIES.join(' | ')} | onnx:<artifact folder>`;

/** The ONNX policy in `folder` with the settings of `options`; `seedOffset` gives a reload its own draws. */
export function loadOnnxPolicy(
  folder: string,
  options: PolicySpecOptions,
  seedOffset = 0,
): Promise<OnnxPolicy> {
  return onnxPolicy({
    folder,
    seed: (options.seed ?? 0) + seedOffset,
    temperature: options.temperature ?? 1,
    maxNewTokens: options.maxNewTokens,
    stopAtAnswer: options.stopAtAnswer,
    contextWindow: options.contextWindow,
    executionProvider: options.executionProvider,
  });
}

/** `spec` as a built-in or `onnx:<folder>` policy; undefined for any other value. */
export async function resolveLocalPolicy(
  spec: string,
  options: PolicySpecOptions,
): Promise<LocalPolicy | undefined> {
  if ((BUILTIN_POLICIES as readonly string[]).includes(spec)) {
    const policy = builtinPolicy(spec as BuiltinPolicyName, {
      mode: options.mode,
      seed: options.seed ?? 0,
      ...(options.actionsPerTurn === undefined ? {} : { actionsPerTurn: options.actionsPerTurn }),
    });
    return { source: policy, describe: spec, close: async () => {} };
  }
  if (!spec.startsWith('onnx:')) return undefined;
  const folder = spec.slice('onnx:'.length);
  if (folder === '') throw new Error('--policy onnx:<folder> needs an artifact folder');
  const policy = await loadOnnxPolicy(folder, options);
  return {
    source: policy,
    describe: `${policy.name} v${policy.version}`,
    close: async () => policy.close?.(),
  };
}
