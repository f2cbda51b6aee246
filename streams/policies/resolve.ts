/**
 * `--policy`: the local values (policies/resolve.ts) and `latest`, which follows the policy
 * topic through Kafka and so lives here.
 */
import {
  LOCAL_POLICY_SPEC_HELP,
  loadOnnxPolicy,
  resolveLocalPolicy,
  type LocalPolicy,
  type PolicySpecOptions,
} from '../../policies/resolve.js';
import type { SpaKafka } from '../kafka/spa-kafka.js';
import { LatestPolicy } from './latest-policy.js';

/** A resolved `--policy` value; `latest` also hands out its follower. */
export interface ResolvedPolicy extends LocalPolicy {
  readonly follower?: LatestPolicy;
}

export interface ResolveOptions extends PolicySpecOptions {
  /** Needed for `latest`. */
  readonly kafka?: SpaKafka;
  /** `latest`: the trainer's staleness bound and export cadence (its --max-staleness, --export-every). */
  readonly maxStaleness?: number;
  readonly exportEvery?: number;
  /** `latest`: the trainer resumed after this many steps at this version (`LatestPolicyOptions.resumedAt`). */
  readonly resumedAt?: { readonly step: number; readonly version: number };
}

/** The accepted `--policy` values, for help texts. */
export const POLICY_SPEC_HELP = `${LOCAL_POLICY_SPEC_HELP} | latest (follows spa.policy)`;

/** Turns `--policy random|oracle|onnx:<folder>|latest` into a policy source; errors name the value. */
export async function resolvePolicy(spec: string, options: ResolveOptions): Promise<ResolvedPolicy> {
  const local = await resolveLocalPolicy(spec, options);
  if (local) return local;
  if (spec === 'latest') return followLatest(options);
  throw new Error(`unknown --policy "${spec}": expected ${POLICY_SPEC_HELP}`);
}

/** `latest`: each PolicyUpdate's artifact, loaded and checked against the update's sha256. */
async function followLatest(options: ResolveOptions): Promise<ResolvedPolicy> {
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
      const policy = await loadOnnxPolicy(update.uri, options, loads++);
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
