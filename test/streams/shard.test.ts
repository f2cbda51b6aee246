import { spawnSync } from 'node:child_process';
import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { envFactory } from '../../envs/registry.js';
import type { Outbound } from '../../schemas/outbound.js';
import { episodeConfig, type EpisodeConfig } from '../../streams/episodes/episode-config.js';
import { plannedTrajectoryIds } from '../../streams/episodes/episodes.js';
import {
  groupsOfShard,
  parseShard,
  shardOfGroup,
  shardTransactionalId,
  type Shard,
} from '../../streams/episodes/shard.js';
import { generatorPipeline } from '../../streams/generator-pipeline.js';
import { builtinPolicy } from '../../policies/builtin.js';
import { oraclePolicy } from '../../policies/oracle-policy.js';
import type { Policy } from '../../policies/policy.js';

const shardsOf = (count: number): Shard[] => Array.from({ length: count }, (_, index) => ({ index, count }));

describe('parseShard', () => {
  it('reads i/n, 0-based', () => {
    expect(parseShard('0/2')).toEqual({ index: 0, count: 2 });
    expect(parseShard('1/2')).toEqual({ index: 1, count: 2 });
    expect(parseShard('0/1')).toEqual({ index: 0, count: 1 });
    expect(parseShard(' 6 / 7 ')).toEqual({ index: 6, count: 7 });
  });

  it.each(['2/2', '3/2', '-1/2', '1/0', '0/0', '1', '1/2/3', 'a/b', '0.5/2', '', '1/'])(
    'refuses "%s", naming the flag and the right form',
    (bad) => {
      expect(() => parseShard(bad)).toThrow(`--shard must be i/n with 0 ≤ i < n`);
      expect(() => parseShard(bad)).toThrow(`got "${bad}"`);
    },
  );
});

describe('shard assignment', () => {
  const configs: EpisodeConfig[] = [
    episodeConfig({ env: 'sokoban', runId: 'r', groups: 6, groupSize: 2, batches: 3 }),
    episodeConfig({ env: 'sokoban', runId: 'r', groups: 1, groupSize: 3, batches: 5 }),
    episodeConfig({ env: 'frozenlake', runId: 'r', split: 'val', groups: 5, groupSize: 1, batches: 2 }),
  ];

  it.each([1, 2, 3, 4, 7])('%i shards are disjoint and together cover the unsharded run', (count) => {
    for (const config of configs) {
      const all = plannedTrajectoryIds(config);
      const perShard = shardsOf(count).map((shard) => plannedTrajectoryIds({ ...config, shard }));
      const union = perShard.flat();
      expect(union).toHaveLength(all.length); // nothing played twice
      expect(new Set(union)).toEqual(new Set(all)); // nothing lost
      // A group (its members) stays in one shard, and shards get ⌊G/n⌋ or ⌈G/n⌉ groups.
      const totalGroups = config.groups * config.batches;
      perShard.forEach((ids, index) => {
        const groups = new Set(ids.map((id) => id.replace(/\/m\d+$/, '')));
        expect(ids).toHaveLength(groups.size * config.groupSize);
        expect(groups.size).toBe(groupsOfShard(totalGroups, { index, count }));
        expect(groups.size).toBeGreaterThanOrEqual(Math.floor(totalGroups / count));
        expect(groups.size).toBeLessThanOrEqual(Math.ceil(totalGroups / count));
      });
      const owners = perShard.map((ids) => new Set(ids.map((id) => id.replace(/\/m\d+$/, ''))));
      for (let a = 0; a < count; a++)
        for (let b = a + 1; b < count; b++)
          expect([...owners[a]!].filter((group) => owners[b]!.has(group))).toEqual([]);
    }
  });

  it('is deterministic: a function of batch, group and shard count only', () => {
    expect(shardOfGroup(4, 2, 3, 3)).toBe((2 * 4 + 3) % 3);
    const config = configs[0]!;
    const shard = { index: 1, count: 3 };
    expect(plannedTrajectoryIds({ ...config, shard })).toEqual(plannedTrajectoryIds({ ...config, shard }));
    expect(plannedTrajectoryIds({ ...config, shard }).slice(0, 4)).toEqual([
      'r/train/b0/g1/m0',
      'r/train/b0/g1/m1',
      'r/train/b0/g4/m0',
      'r/train/b0/g4/m1',
    ]);
  });

  it('gives each shard its own transactional id and keeps the unsharded one', () => {
    expect(shardTransactionalId('spa-generate-x', { index: 0, count: 1 })).toBe('spa-generate-x');
    const ids = shardsOf(3).map((shard) => shardTransactionalId('spa-generate-x', shard));
    expect(new Set(ids).size).toBe(3);
    expect(ids).toContain('spa-generate-x-shard-2of3');
    expect(ids).not.toContain('spa-generate-x');
  });
});

/** Every record the pipeline publishes for `config`, with a fixed clock so records compare. */
async function generate(
  config: EpisodeConfig,
  skip?: ReadonlySet<string>,
  policy: Policy = builtinPolicy('oracle', { mode: 'wm' }),
): Promise<Outbound[]> {
  return lastValueFrom(
    generatorPipeline(config, envFactory({ name: config.env }), policy, {
      target: 'sft',
      now: () => 0,
      skip,
    }).pipe(toArray()),
  );
}

const byKey = (records: readonly Outbound[]) =>
  records.map((o) => `${o.topic} ${o.key} ${JSON.stringify(o.record)}`).sort();

describe('sharded generation', () => {
  const config = episodeConfig({ env: 'sokoban', runId: 's', groups: 5, groupSize: 1, batches: 2 });

  it('publishes, over its shards, the same records as one generator (a deterministic policy)', async () => {
    const whole = await generate(config);
    const shards = await Promise.all(shardsOf(3).map((shard) => generate({ ...config, shard })));
    expect(whole.filter((o) => o.topic === 'trajectories')).toHaveLength(10);
    expect(byKey(shards.flat())).toEqual(byKey(whole));
  });

  // Sampling policies draw per trajectory (PolicyRequest.stream), so sharding keeps their draws too.
  it.each([
    ['random', () => builtinPolicy('random', { mode: 'wm', seed: 4 })],
    ['oracle exploring', () => oraclePolicy({ mode: 'wm', actionsPerTurn: 1, exploreRate: 0.5, seed: 4 })],
  ])('publishes the same records over its shards with the %s policy', async (_, policy) => {
    const sampled = { ...config, groupSize: 3 };
    const whole = await generate(sampled, undefined, policy());
    const shards = await Promise.all(
      shardsOf(2).map((shard) => generate({ ...sampled, shard }, undefined, policy())),
    );
    expect(whole.filter((o) => o.topic === 'trajectories')).toHaveLength(30);
    expect(byKey(shards.flat())).toEqual(byKey(whole));
    // The members of a group really differ: the draws are not shared across slots.
    const responses = whole
      .filter((o) => o.topic === 'trajectories' && o.key.startsWith('s/train/b0/g0/'))
      .map((o) => JSON.stringify(o.record).replaceAll(/s\/train\/b0\/g0\/m\d/g, ''));
    expect(new Set(responses).size).toBeGreaterThan(1);
  });

  it('does not play the trajectories it is told an earlier attempt committed', async () => {
    const shard = { index: 1, count: 2 };
    const planned = plannedTrajectoryIds({ ...config, shard });
    const skip = new Set(planned.slice(0, 2));
    const rest = await generate({ ...config, shard }, skip);
    const ids = rest.filter((o) => o.topic === 'trajectories').map((o) => o.key);
    expect([...ids].sort()).toEqual(planned.slice(2).sort());
    const none = await generate({ ...config, shard }, new Set(planned));
    expect(none).toEqual([]);
  });
});

describe('spa generate --shard', () => {
  const spa = (...args: string[]) =>
    spawnSync(process.execPath, ['bin/spa.mjs', 'generate', '--env', 'sokoban', ...args], {
      encoding: 'utf8',
      timeout: 60_000,
    });

  it('refuses a bad value, naming --shard', () => {
    const result = spa('--shard', '2/2', '--out', 'kafka');
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('--shard must be i/n with 0 ≤ i < n');
    expect(result.stderr).toContain('got "2/2"');
  });

  it('refuses a shard writing a file (shards share the run topics)', () => {
    const result = spa('--shard', '0/2', '--out', '/tmp/spa-shard-refused.jsonl');
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('--shard 0/2 needs --out kafka');
  });
});
