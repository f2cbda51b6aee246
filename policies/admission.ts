/**
 * The generator's admission rule for `--policy latest` (docs/spa-schedule.md#admission): which
 * policy versions a batch may be played with so that the PPO trainer never trains on records more
 * than `maxStaleness` versions older than its own version.
 */

/** How the PPO trainer advances its version, and how stale a record it may consume. */
export interface PublishSchedule {
  /** The trainer's version before its first step: the first version the generator plays. */
  readonly startVersion: number;
  /** The trainer publishes a new version after every `exportEvery`-th step (`--export-every`). */
  readonly exportEvery: number;
  /** A record may be at most this many versions older than the trainer's version (`--max-staleness`). */
  readonly maxStaleness: number;
}

/** Throws, naming the field, unless `exportEvery` ≥ 1 and `maxStaleness` ≥ 0 are integers. */
export function checkSchedule(schedule: Omit<PublishSchedule, 'startVersion'>): void {
  const { exportEvery, maxStaleness } = schedule;
  if (!Number.isInteger(exportEvery) || exportEvery < 1)
    throw new Error(`exportEvery must be a positive integer, got ${exportEvery}`);
  if (!Number.isInteger(maxStaleness) || maxStaleness < 0)
    throw new Error(`maxStaleness must be an integer ≥ 0, got ${maxStaleness}`);
}

/**
 * The oldest version batch `batch` (0-based, counted from the trainer's first step) may start
 * with. One batch is one trainer step, so the trainer trains on batch b at step b + 1, when it
 * has exported after steps E, 2E, … ≤ b: its version is then startVersion + ⌊b / E⌋. A batch
 * on that version minus `maxStaleness` or newer is within the bound; an older one must wait.
 * Every version this asks for is published after a step whose batch precedes b, so no wait is
 * unsatisfiable, whatever the combination of E ≥ 1 and maxStaleness ≥ 0.
 */
export function oldestAdmissibleVersion(batch: number, schedule: PublishSchedule): number {
  return schedule.startVersion + Math.floor(batch / schedule.exportEvery) - schedule.maxStaleness;
}
