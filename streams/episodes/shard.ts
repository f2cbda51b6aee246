/**
 * Sharded generation (`spa generate --shard i/n`): n generator processes split one run's SPA
 * groups (a group = the `groupSize` episodes that share one puzzle seed) so that together they
 * play every group of the unsharded run exactly once, under the same trajectory ids.
 */

/** Shard `index` of `count` (0-based). The unsharded generator is shard 0 of 1. */
export interface Shard {
  readonly index: number;
  readonly count: number;
}

/** One generator playing everything: what `spa generate` without `--shard` is. */
export const UNSHARDED: Shard = { index: 0, count: 1 };

/**
 * Reads `i/n` (0 ≤ i < n, both integers) as a shard; the error names `flag` and the right form.
 */
export function parseShard(text: string, flag = '--shard'): Shard {
  const match = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(text);
  const index = Number(match?.[1]);
  const count = Number(match?.[2]);
  if (!match || !Number.isSafeInteger(index) || !Number.isSafeInteger(count) || count < 1 || index >= count)
    throw new Error(
      `${flag} must be i/n with 0 ≤ i < n (shard i of n generators, 0-based), e.g. 0/2 or 1/2; got "${text}"`,
    );
  return { index, count };
}

/**
 * The shard that plays group `group` of batch `batch` (0-based) when a batch has `groups`
 * groups: round-robin over the run's groups in the order the unsharded generator plays them
 * (batch-major), so every shard gets ⌊G/n⌋ or ⌈G/n⌉ of the run's G groups, also when a batch
 * has fewer groups than there are shards. On the train split group k = b·groups + g plays seed
 * seedBase + k, so a shard's puzzles are the seeds ≡ index (mod n) counted from seedBase.
 */
export function shardOfGroup(groups: number, batch: number, group: number, count: number): number {
  return (batch * groups + group) % count;
}

/**
 * A shard's own transactional id: the base id for the unsharded generator (as before sharding),
 * `<base>-shard-<i>of<n>` otherwise. Restarting a shard with the same flags reuses its id, so
 * its producer fences that shard's zombie and nobody else's.
 */
export function shardTransactionalId(base: string, shard: Shard): string {
  return shard.count === 1 ? base : `${base}-shard-${shard.index}of${shard.count}`;
}

/** How a shard is named in logs and progress lines (`shard 1/2`); empty when unsharded. */
export function shardLabel(shard: Shard): string {
  return shard.count === 1 ? '' : `shard ${shard.index}/${shard.count}`;
}

/** How many of a run's `totalGroups` groups (batches × groups per batch) shard `shard` plays. */
export function groupsOfShard(totalGroups: number, shard: Shard): number {
  return shard.index < totalGroups ? Math.floor((totalGroups - 1 - shard.index) / shard.count) + 1 : 0;
}
