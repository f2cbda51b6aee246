import type { EpisodeConfig } from '../streams/episodes/episode-config.js';
import { groupsOfShard, shardLabel } from '../streams/episodes/shard.js';

/**
 * A one-line progress meter on stderr with counts and rates: redrawn in place on a terminal,
 * printed at most every `intervalMs` otherwise (logs, CI).
 */
export class Progress {
  private readonly started = Date.now();
  private lastPrint = 0;
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly label: string,
    private readonly total?: { key: string; value: number },
    private readonly intervalMs = 1000,
  ) {}

  add(key: string, n = 1): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + n);
    const now = Date.now();
    if (now - this.lastPrint >= (process.stderr.isTTY ? 100 : this.intervalMs)) {
      this.lastPrint = now;
      this.print(false);
    }
  }

  done(): void {
    this.print(true);
  }

  private print(final: boolean): void {
    const seconds = Math.max((Date.now() - this.started) / 1000, 1e-3);
    const parts = [...this.counts].map(([key, n]) => {
      const of = this.total?.key === key ? `/${this.total.value}` : '';
      return `${key} ${n}${of} (${(n / seconds).toFixed(1)}/s)`;
    });
    const line = `[${this.label}] ${parts.join('  ')}  ${seconds.toFixed(1)}s`;
    if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${line}${final ? '\n' : ''}`);
    else process.stderr.write(line + '\n');
  }
}

/** A progress line over the trajectories `episodes` plays (its shard's groups × group size); a shard is named in the label. */
export function trajectoryProgress(label: string, episodes: EpisodeConfig): Progress {
  const shard = shardLabel(episodes.shard);
  const groups = groupsOfShard(episodes.groups * episodes.batches, episodes.shard);
  return new Progress(shard ? `${label} ${shard}` : label, {
    key: 'trajectories',
    value: groups * episodes.groupSize,
  });
}
