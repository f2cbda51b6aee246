import type { PromptMode } from '../../envs/protocol/index.js';
import type { SpaKafka } from '../kafka/spa-kafka.js';
import { BUILTIN_POLICIES, builtinPolicy, type BuiltinPolicyName } from '../../policies/builtin.js';
import { LatestPolicy } from './latest-policy.js';
import { onnxPolicy } from '../../policies/onnx/index.js';
import type { PolicySource } from '../../policies/policy.js';

/** A resolved `--policy` value: the source for the episode loop and how to release it. */
export interface ResolvedPolicy {
  readonly source: PolicySource;
  readonly describe: string;
  readonly follower?: LatestPolicy;
  close(): Promise<void>;
}

export interface ResolveOptions {
  readonly mode: PromptMode;
  readonly seed?: number;
  readonly temperature?: number;
  /** Built-in policies: actions a turn (the random policy's count, the oracle's most; builtin.ts). */
  readonly actionsPerTurn?: number;
  /** Needed for `latest`. */
  readonly kafka?: SpaKafka;
  /** `latest`: the trainer's staleness bound and export cadence (its --max-staleness, --export-every). */
  readonly maxStaleness?: number;
  readonly exportEvery?: number;
  /** `latest`: the trainer resumed after this many steps at this version (`LatestPolicyOptions.resumedAt`). */
  readonly resumedAt?: { readonly step: number; readonly version: number };
  /** Token cap per assistant turn for ONNX policies (SPA: 400). */
  readonly maxNewTokens?: number;
  /** ONNX policies: also end a turn at `</answer>` (not SPA). */
  readonly stopAtAnswer?: boolean;
  /** ONNX policies: tokens the model attends to (`OnnxPolicyOptions.contextWindow`). */
  readonly contextWindow?: number;
  /** onnxruntime execution provider for ONNX policies. Default cpu. */
  readonly executionProvider?: 'cpu' | 'cuda';
}

/** The accepted `--policy` values, for help texts. */
export const POLICY_SPEC_HELP = `${BUILTIN_POLICIES.join(' | ')} | onnx:<artifact folder> | latest (follows spa.policy)`;

/** Turns `--policy random|oracle|onnx:<folder>|latest` into a policy source; errors name the value. */
export async function resolvePolicy(spec: string, options: ResolveOptions): Promise<ResolvedPolicy> {
  if ((BUILTIN_POLICIES as readonly string[]).includes(spec)) {
    const policy = builtinPolicy(spec as BuiltinPolicyName, {
      mode: options.mode,
      seed: options.seed ?? 0,
      ...(options.actionsPerTurn === undefined ? {} : { actionsPerTurn: options.actionsPerTurn }),
    });
    return { source: policy, describe: spec, close: async () => {} };
  }
  if (spec.startsWith('onnx:')) {
    const folder = spec.slice('onnx:'.length);
    if (folder === '') throw new Error('--policy onnx:<folder> needs an artifact folder');
    const policy = await onnxPolicy({
      folder,
      seed: options.seed ?? 0,
      temperature: options.temperature ?? 1,
      maxNewTokens: options.maxNewTokens,
      stopAtAnswer: options.stopAtAnswer,
      contextWindow: options.contextWindow,
      executionProvider: options.executionProvider,
    });
    return {
      source: policy,
      describe: `${policy.name} v${policy.version}`,
      close: async () => policy.close?.(),
    };
  }
  if (spec === 'latest') {
    const kafka = options.kafka;
    if (!kafka) throw new Error('--policy latest needs Kafka (it follows the spa.policy topic)');
    let loads = 0;
    const follower = await LatestPolicy.start({
      transport: kafka.transport,
      topic: kafka.topics.policy,
      maxStaleness: options.maxStaleness ?? 1,
      exportEvery: options.exportEvery ?? 1,
      ...(options.resumedAt ? { resumedAt: options.resumedAt } : {}),
      load: async (update) => {
        const policy = await onnxPolicy({
          folder: update.uri,
          seed: (options.seed ?? 0) + loads++,
          temperature: options.temperature ?? 1,
          maxNewTokens: options.maxNewTokens,
          stopAtAnswer: options.stopAtAnswer,
          contextWindow: options.contextWindow,
          executionProvider: options.executionProvider,
        });
        if (policy.manifest.sha256 !== update.sha256) {
          await policy.close?.();
          throw new Error(
            `artifact ${update.uri} has sha256 ${policy.manifest.sha256}, PolicyUpdate v${update.version} says ${update.sha256}`,
          );
        }
        return policy;
      },
    });
    return { source: follower.next, describe: 'latest', follower, close: () => follower.close() };
  }
  throw new Error(`unknown --policy "${spec}": expected ${POLICY_SPEC_HELP}`);
}
