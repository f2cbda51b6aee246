/**
 * Backpressure between the episode loop and a slow sink. The sink counts records it has received
 * but not yet made durable (`add` / `done`); the episode loop awaits `ready()` before each batch
 * and turn, so it **blocks** while more than `limit` records are in flight instead of queueing
 * them without bound.
 */
/** Default in-flight bound for the generator's sinks: a few transactions' worth of records. */
export const SINK_IN_FLIGHT_LIMIT = 256;

export class DemandGate {
  private inFlight = 0;
  private waiters: (() => void)[] = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1)
      throw new RangeError(`DemandGate limit must be a positive integer, got ${limit}`);
  }

  /** Records received by the sink. */
  add(n = 1): void {
    this.inFlight += n;
  }

  /** Records the sink has made durable (written, committed). */
  done(n = 1): void {
    this.inFlight = Math.max(0, this.inFlight - n);
    if (this.inFlight <= this.limit) for (const wake of this.waiters.splice(0)) wake();
  }

  /** Resolves once at most `limit` records are in flight. */
  ready(): Promise<void> {
    if (this.inFlight <= this.limit) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  get pending(): number {
    return this.inFlight;
  }
}
