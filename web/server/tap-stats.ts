/**
 * Running numbers for the web tap: per env and run stage (warm-up, self-play, PPO:
 * web/server/run-stage.ts), the success rate over the trajectories seen, Pass@1 and
 * Pass@k over the same full groups (grouped by `group_id`, docs/spa-eval.md#pass-at-k), records per
 * second, and consumer lag over time.
 * Memory is bounded: open groups are capped per env (the oldest are folded into a histogram
 * that keeps their contribution), envs are capped at {@link MAX_ENVS} (`env` is any string a
 * record carries; the rest share one row), and the time series slide over the last
 * {@link SERIES_SECONDS}.
 */
import { passAtK } from '../../streams/eval/pass-at-k.js';

/** Seconds of throughput and lag history kept (a sliding window). */
export const SERIES_SECONDS = 120;
/** Groups per env kept by id before the oldest are folded into the histogram. */
const OPEN_GROUPS_PER_ENV = 5000;
/** Envs shown by name; episodes of any further env are counted under {@link OTHER_ENVS}. */
export const MAX_ENVS = 32;
/** The row that counts the envs past {@link MAX_ENVS}. */
export const OTHER_ENVS = '(other envs)';

/** One env's outcome numbers in one stage of a run (web/server/run-stage.ts). */
interface EnvStats {
  readonly env: string;
  /** warm-up, self-play, PPO, …: each stage's episodes are counted apart. */
  readonly stage: string;
  readonly episodes: number;
  readonly successes: number;
  /** Mean success over all episodes, groups still filling (or smaller) included. */
  readonly successRate: number;
  /**
   * Group size of Pass@k: the largest group seen. Pass@1 and Pass@k are over the full groups (k
   * episodes) only, so they describe the same episodes and Pass@1 ≤ Pass@k; a tapped topic may
   * mix group sizes (a run's SFT data, rollouts, warm-up), which the success rate counts too.
   */
  readonly k: number;
  /** Mean success over the full groups' episodes (SPA's Pass@1); null before any group is full. */
  readonly pass1: number | null;
  /** Fraction of full groups with at least one success; null before any group is full. */
  readonly passK: number | null;
  readonly fullGroups: number;
}

/** A point of a time series: `t` in epoch ms (start of its second). */
export interface SeriesPoint {
  readonly t: number;
  readonly value: number;
}

/** What the page's stats panel shows. */
export interface TapStatsSnapshot {
  readonly read: number;
  readonly byKind: Readonly<Record<string, number>>;
  readonly envs: readonly EnvStats[];
  /** Records read per second. */
  readonly throughput: readonly SeriesPoint[];
  /** Records on the tapped topics not yet read (sum over partitions), per poll. */
  readonly lag: readonly SeriesPoint[];
}

interface GroupCount {
  n: number;
  c: number;
}

class EnvOutcomes {
  episodes = 0;
  successes = 0;
  readonly open = new Map<string, GroupCount>();
  /** Folded groups: `${n}:${c}` → how many groups had n episodes and c successes. */
  readonly folded = new Map<string, number>();

  add(groupId: string, success: boolean): void {
    this.episodes += 1;
    if (success) this.successes += 1;
    const group = this.open.get(groupId) ?? { n: 0, c: 0 };
    group.n += 1;
    if (success) group.c += 1;
    this.open.set(groupId, group);
    if (this.open.size > OPEN_GROUPS_PER_ENV) {
      const [oldestId, oldest] = this.open.entries().next().value as [string, GroupCount];
      this.open.delete(oldestId);
      const key = `${oldest.n}:${oldest.c}`;
      this.folded.set(key, (this.folded.get(key) ?? 0) + 1);
    }
  }

  stats(env: string, stage: string): EnvStats {
    const groups: [GroupCount, number][] = [
      ...[...this.open.values()].map((g): [GroupCount, number] => [g, 1]),
      ...[...this.folded].map(([key, count]): [GroupCount, number] => {
        const [n, c] = key.split(':').map(Number);
        return [{ n: n ?? 0, c: c ?? 0 }, count];
      }),
    ];
    const k = groups.reduce((max, [g]) => Math.max(max, g.n), 0);
    const full = groups.filter(([g]) => g.n === k);
    const fullGroups = full.reduce((sum, [, count]) => sum + count, 0);
    const overFull = (score: (g: GroupCount) => number): number | null =>
      fullGroups === 0 ? null : full.reduce((sum, [g, count]) => sum + count * score(g), 0) / fullGroups;
    return {
      env,
      stage,
      episodes: this.episodes,
      successes: this.successes,
      successRate: this.episodes === 0 ? 0 : this.successes / this.episodes,
      k,
      pass1: overFull((g) => g.c / k),
      passK: overFull((g) => passAtK(k, g.c, k)),
      fullGroups,
    };
  }
}

/** A run's stages in the order they run; others after them. */
const STAGE_ORDER = ['warm-up', 'self-play', 'PPO'];
const stageRank = (stage: string): number =>
  STAGE_ORDER.includes(stage) ? STAGE_ORDER.indexOf(stage) : STAGE_ORDER.length;

/** Accumulates what the tap has read; {@link snapshot} gives the page's numbers. */
export class TapStats {
  private read = 0;
  private readonly byKind = new Map<string, number>();
  private readonly envs = new Map<string, EnvOutcomes>();
  private readonly perSecond = new Map<number, number>();
  private readonly lagPoints: SeriesPoint[] = [];

  /** Counts one record read at `now`. */
  recordRead(kind: string, now = Date.now()): void {
    this.read += 1;
    this.byKind.set(kind, (this.byKind.get(kind) ?? 0) + 1);
    const second = Math.floor(now / 1000) * 1000;
    this.perSecond.set(second, (this.perSecond.get(second) ?? 0) + 1);
    for (const t of this.perSecond.keys()) if (t <= second - SERIES_SECONDS * 1000) this.perSecond.delete(t);
  }

  /** Adds one finished episode's outcome (from a Trajectory record) to its env's row of `stage`. */
  episode(env: string, groupId: string, success: boolean, stage = ''): void {
    const key = `${env}\u0000${stage}`;
    const named = this.envs.has(key) || this.envs.size < MAX_ENVS;
    // In the shared row a group is its env's group: the same group id in two envs is two groups.
    const [row, group] = named ? [key, groupId] : [`${OTHER_ENVS}\u0000`, `${key}\u0000${groupId}`];
    let outcomes = this.envs.get(row);
    if (!outcomes) this.envs.set(row, (outcomes = new EnvOutcomes()));
    outcomes.add(group, success);
  }

  /** Adds a consumer-lag measurement taken at `now`. */
  lag(value: number, now = Date.now()): void {
    this.lagPoints.push({ t: now, value });
    while (this.lagPoints.length > 0 && this.lagPoints[0]!.t <= now - SERIES_SECONDS * 1000)
      this.lagPoints.shift();
  }

  /** The numbers as of `now`; seconds without records count as 0/s up to now. */
  snapshot(now = Date.now()): TapStatsSnapshot {
    const current = Math.floor(now / 1000) * 1000;
    const first = Math.min(...this.perSecond.keys(), current);
    const throughput: SeriesPoint[] = [];
    for (let t = Math.max(first, current - (SERIES_SECONDS - 1) * 1000); t <= current; t += 1000)
      throughput.push({ t, value: this.perSecond.get(t) ?? 0 });
    return {
      read: this.read,
      byKind: Object.fromEntries(this.byKind),
      envs: [...this.envs]
        .map(([key, outcomes]) => outcomes.stats(...(key.split('\u0000') as [string, string])))
        .sort((a, b) => a.env.localeCompare(b.env) || stageRank(a.stage) - stageRank(b.stage)),
      throughput,
      lag: [...this.lagPoints],
    };
  }
}
