import type { EpisodeConfig } from '../streams/episodes/episode-config.js';
import { groupsOfShard, shardLabel } from '../streams/episodes/shard.js';

/** The longest a meter stays silent: a phase whose items come slowly still says it is alive. */
const HEARTBEAT_MS = 10_000;

/**
 * A one-line progress meter on stderr with counts, rates and, with a total, the time left: redrawn
 * in place on a terminal, printed at most every `intervalMs` otherwise (logs, CI), and at least
 * every 10 s until {@link done}, also while no item comes (an evaluation's slow episodes).
 */
export class Progress {
  private readonly started = Date.now();
  private lastPrint = 0;
  private readonly counts = new Map<string, number>();
  /** When the first item of the total's key came: the time left is timed from it. */
  private firstAt: number | undefined;
  private readonly heartbeat: ReturnType<typeof setInterval>;

  constructor(
    private readonly label: string,
    private readonly total?: { key: string; value: number },
    private readonly intervalMs = 1000,
  ) {
    this.heartbeat = setInterval(() => {
      if (Date.now() - Math.max(this.lastPrint, this.started) >= HEARTBEAT_MS) {
        this.lastPrint = Date.now();
        this.print(false);
      }
    }, 1000);
    this.heartbeat.unref(); // never what keeps a process alive
  }

  add(key: string, n = 1): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + n);
    const now = Date.now();
    if (key === this.total?.key) this.firstAt ??= now;
    if (now - this.lastPrint >= (process.stderr.isTTY ? 100 : this.intervalMs)) {
      this.lastPrint = now;
      this.print(false);
    }
  }

  done(): void {
    clearInterval(this.heartbeat);
    this.print(true);
  }

  private print(final: boolean): void {
    const seconds = Math.max((Date.now() - this.started) / 1000, 1e-3);
    const parts = [...this.counts].map(([key, n]) => {
      const of = this.total?.key === key ? `/${this.total.value}` : '';
      return `${key} ${n}${of} (${(n / seconds).toFixed(1)}/s)`;
    });
    const line = `[${this.label}] ${parts.join('  ')}  ${seconds.toFixed(1)}s${this.timeLeft()}`;
    if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${line}${final ? '\n' : ''}`);
    else process.stderr.write(line + '\n');
  }

  /**
   * `, about 42s left` at the rate since the first item, while the total is known and not reached.
   * Not from the start: a phase's first item comes after its set-up (an evaluation's policy load and
   * its first, concurrent episodes), and one item over that time read as hours left.
   */
  private timeLeft(): string {
    if (!this.total || this.firstAt === undefined) return '';
    const done = this.counts.get(this.total.key) ?? 0;
    const since = (Date.now() - this.firstAt) / 1000;
    if (done < 2 || done >= this.total.value || since <= 0) return '';
    return `, about ${((since * (this.total.value - done)) / (done - 1)).toFixed(0)}s left`;
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
