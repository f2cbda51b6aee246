import { spaMetrics } from '../telemetry/metrics.js';
import type { Policy, PolicySource } from '../../policies/policy.js';

/**
 * `policy` with every `act` timed into spa_wait_for_policy_seconds, and the tokens it decoded
 * (its `tokensDecoded` total, when it keeps one) added to spa_generation_tokens_total{policy}.
 */
export function meteredPolicy(policy: Policy): Policy {
  return {
    get name() {
      return policy.name;
    },
    get version() {
      return policy.version;
    },
    get tokensDecoded() {
      return policy.tokensDecoded;
    },
    act: async (requests) => {
      const metrics = spaMetrics();
      const before = policy.tokensDecoded;
      const texts = await metrics.timeWait(metrics.waitForPolicy, () => policy.act(requests));
      if (before !== undefined && policy.tokensDecoded !== undefined)
        metrics.generationTokens.add(policy.tokensDecoded - before, { policy: policy.name });
      return texts;
    },
    close: async () => policy.close?.(),
  };
}

/**
 * A policy source whose policies are metered: spa_wait_for_policy_seconds times resolving the
 * policy for a batch (a live swap may load a model) and each call to it. The compositions that
 * run episodes (streams/generator-pipeline.ts, streams/eval/evaluate.ts) attach it.
 */
export function meteredPolicySource(source: PolicySource): PolicySource {
  if (typeof source !== 'function') return meteredPolicy(source);
  return async () =>
    meteredPolicy(await spaMetrics().timeWait(spaMetrics().waitForPolicy, async () => source()));
}
