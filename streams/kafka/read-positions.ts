/**
 * Where a read that commits nothing (consume-spa.ts: tap, replay, bench) is in each partition,
 * kept by the read itself so that a broker restart neither repeats nor skips a record.
 *
 * Why: the read's throwaway group has no committed offsets, so when its consumer rejoins after
 * the broker restarts, the client starts over at the group's reset policy — the whole history
 * again (`earliest`: every count and Pass@k of the web tap doubled) or past whatever was written
 * while it reconnected (`latest`). Committing to the throwaway group would survive a restart only
 * up to the last commit (records handed out after it shown again) and costs a request per
 * commit; seeking on every assignment costs nothing and is exact.
 */
import type {
  ConsumedRecord,
  TopicPartition,
  TopicPartitionOffset,
} from '../../infra/kafka/client/transport.js';

/** A partition's starting offset in the read. */
interface PartitionStart {
  readonly partition: number;
  readonly start: bigint;
}

/**
 * The next offset to show per partition; seeks the source there on every assignment and says in
 * the log when the connection was lost and where the read resumes.
 */
export class ReadPositions {
  /** Offset after the last record handed out, or the read's start before the first. */
  private readonly next: Map<number, bigint>;
  private assignments = 0;
  private lost = false;

  constructor(
    private readonly topic: string,
    starts: readonly PartitionStart[],
    private readonly log: (line: string) => void,
  ) {
    this.next = new Map(starts.map((s) => [s.partition, s.start]));
  }

  /**
   * The source's partitions were (re)assigned: seek each to where the read is. The first
   * assignment is the read's start; a later one is a rejoin, said in the log unless the
   * connection's return will say it.
   */
  assigned(partitions: readonly TopicPartition[], seek: (position: TopicPartitionOffset) => void): void {
    for (const { topic, partition } of partitions) {
      const offset = this.next.get(partition);
      // A partition added since the read started begins where the group starts (earliest).
      if (topic === this.topic && offset !== undefined) seek({ topic, partition, offset });
    }
    this.assignments += 1;
    if (this.assignments > 1 && !this.lost)
      this.log(`${this.topic}: the consumer rejoined its group, resuming at ${this.positions()}`);
  }

  /** The source lost or regained the broker (transport.ts, `onConnection`). */
  connection(state: 'lost' | 'regained'): void {
    if (state === 'lost' && !this.lost)
      this.log(`${this.topic}: broker connection lost; reconnecting (the read keeps its place)`);
    else if (state === 'regained' && this.lost)
      this.log(`${this.topic}: broker connection lost/regained, resuming at ${this.positions()}`);
    this.lost = state === 'lost';
  }

  /**
   * True for a record not shown before (the position moves past it); false for one below the
   * position, delivered again by a client that fetched before a rejoin's seek took hold.
   */
  take(record: ConsumedRecord): boolean {
    const next = this.next.get(record.partition);
    if (next !== undefined && record.offset < next) return false;
    this.next.set(record.partition, record.offset + 1n);
    return true;
  }

  private positions(): string {
    const all = [...this.next].sort(([a], [b]) => a - b);
    return all.map(([partition, offset]) => `partition ${partition} offset ${offset}`).join(', ');
  }
}
