import { spaMetrics } from '../telemetry/metrics.js';
import type { Policy, PolicySource } from './policy.js';

/** `policy` with every `act` timed into spa_wait_for_policy_seconds. */
export function meteredPolicy(policy: Policy): Policy {
  return {
    get name() {
      return policy.name;
    },
    get version() {
      return policy.version;
    },
    act: (requests) => spaMetrics().timeWait(spaMetrics().waitForPolicy, () => policy.act(requests)),
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
