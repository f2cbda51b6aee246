import { afterEach, describe, expect, it } from 'vitest';
import { meteredPolicy, meteredPolicySource } from '../../streams/policies/metered-policy.js';
import type { Policy } from '../../policies/policy.js';
import { startInMemoryTelemetry, type InMemoryTelemetry } from './harness.js';

let running: InMemoryTelemetry | undefined;
afterEach(async () => {
  await running?.telemetry.shutdown();
  running = undefined;
});

/** A policy that answers "a" to every request and counts its calls and closes. */
function countingPolicy(version = 3): Policy & { calls: number; closed: number } {
  return {
    name: 'counting',
    version,
    calls: 0,
    closed: 0,
    async act(requests) {
      this.calls++;
      return requests.map(() => 'a');
    },
    async close() {
      this.closed++;
    },
  };
}

/** How many waits spa_wait_for_policy_seconds has recorded. */
async function waits(telemetry: InMemoryTelemetry): Promise<number> {
  const points = await telemetry.points('spa_wait_for_policy_seconds');
  return points.reduce((n, p) => n + (p.value as { count: number }).count, 0);
}

describe('meteredPolicy', () => {
  it('passes name, version, answers and close through and times every act', async () => {
    running = await startInMemoryTelemetry();
    const inner = countingPolicy();
    const policy = meteredPolicy(inner);
    expect([policy.name, policy.version]).toEqual(['counting', 3]);
    expect(await policy.act([])).toEqual([]);
    await policy.act([]);
    await policy.close?.();
    expect([inner.calls, inner.closed]).toEqual([2, 1]);
    expect(await waits(running)).toBe(2);
  });

  it('adds the tokens the policy decoded in each act to spa_generation_tokens_total{policy}', async () => {
    running = await startInMemoryTelemetry();
    let decoded = 10; // a total carried over from before metering began: not counted
    const inner: Policy = {
      name: 'llm',
      version: 1,
      get tokensDecoded() {
        return decoded;
      },
      async act(requests) {
        decoded += 4 * requests.length;
        return requests.map(() => 'x');
      },
    };
    const policy = meteredPolicy(inner);
    const request = {} as Parameters<Policy['act']>[0][number];
    await policy.act([request, request]);
    await policy.act([request]);
    const points = await running.points('spa_generation_tokens_total');
    expect(points.map((p) => [p.attributes, p.value])).toEqual([[{ policy: 'llm' }, 12]]);
    expect(policy.tokensDecoded).toBe(22);
  });

  it('counts no tokens for a policy that keeps no total', async () => {
    running = await startInMemoryTelemetry();
    await meteredPolicy(countingPolicy()).act([]);
    expect(await running.points('spa_generation_tokens_total')).toEqual([]);
  });

  it('times resolving a policy source function as well as acting', async () => {
    running = await startInMemoryTelemetry();
    const source = meteredPolicySource(async () => countingPolicy(7));
    expect(typeof source).toBe('function');
    const policy = await (source as () => Promise<Policy>)();
    expect(policy.version).toBe(7);
    await policy.act([]);
    expect(await waits(running)).toBe(2);
  });
});
