import type { PolicyUpdate } from '../schemas/index.js';
import { checkSchedule, oldestAdmissibleVersion } from './admission.js';
import type { Policy } from './policy.js';

export interface SwappingPolicyOptions {
  /** Where the updates come from, for messages (e.g. the policy topic). */
  readonly origin: string;
  /** Loads the artifact a PolicyUpdate names (and checks its sha256). */
  readonly load: (update: PolicyUpdate) => Promise<Policy>;
  /**
   * Admission control (`oldestAdmissibleVersion`, docs/spa-schedule.md#admission): the trainer
   * trains on the generator's batch b at its step b + 1 and publishes a version after every
   * `exportEvery`-th step; batch b waits until a version at most `maxStaleness` older than the
   * trainer's version at that step is loaded. Batches are counted from the first one, and the
   * first version loaded is taken as the trainer's starting version. Defaults 1 and 1.
   */
  readonly maxStaleness?: number;
  readonly exportEvery?: number;
  /**
   * A trainer resumed from a checkpoint: the steps it has done and the version it has published.
   * The first batch is then batch `step`, and the starting version follows from the schedule;
   * without this a resumed generator would count batches from 0 and run ahead of the trainer.
   */
  readonly resumedAt?: { readonly step: number; readonly version: number };
  /** How long a batch may wait for the first or a newer version. Default 10 minutes. */
  readonly waitTimeoutMs?: number;
  readonly log?: (line: string) => void;
}

/**
 * The newest loaded version of a policy, handed to each new batch of episodes once admissible.
 * Versions arrive through {@link offer} (streams/policies/latest-policy.ts feeds it from the
 * policy topic). Swaps happen only between batches (the episode loop resolves its policy once
 * per batch), so no episode mixes versions. A failed load is reported and the previous version
 * stays in use.
 */
export class SwappingPolicy {
  private current: Policy | undefined;
  /** The newest update offered: what the next load loads. */
  private newest: PolicyUpdate | undefined;
  private loading: Promise<void> = Promise.resolve();
  /** Batches started so far: the next batch's index in the trainer's steps. */
  private batchesStarted = 0;
  /** The first version loaded: the trainer's version before its first step. */
  private startVersion: number | undefined;
  private waiters: (() => void)[] = [];
  private retired: Policy[] = [];
  /** Policy version → batches started with it (the generator's staleness view). */
  readonly batchesByVersion = new Map<number, number>();
  /** Policy version → artifact URI of every version loaded. */
  readonly artifacts = new Map<number, string>();

  constructor(private readonly options: SwappingPolicyOptions) {
    checkSchedule({ exportEvery: options.exportEvery ?? 1, maxStaleness: options.maxStaleness ?? 1 });
    if (options.resumedAt) {
      const { step, version } = options.resumedAt;
      this.batchesStarted = step;
      this.startVersion = version - Math.floor(step / (options.exportEvery ?? 1));
    }
  }

  /** The policy-source function for `episodes()`: the policy for the next batch. */
  readonly next = async (): Promise<Policy> => {
    const deadline = Date.now() + (this.options.waitTimeoutMs ?? 600_000);
    await this.loading;
    const batch = this.batchesStarted;
    const { exportEvery = 1, maxStaleness = 1 } = this.options;
    const oldest = () =>
      oldestAdmissibleVersion(batch, { startVersion: this.startVersion ?? 0, exportEvery, maxStaleness });
    const started = Date.now();
    let told = started;
    while (this.current === undefined || this.current.version < oldest()) {
      const why =
        this.current === undefined
          ? 'a first policy version'
          : `policy v${oldest()} for batch ${batch} (v${this.current.version} is loaded; exportEvery ` +
            `${exportEvery}, maxStaleness ${maxStaleness})`;
      if (Date.now() > deadline)
        throw new Error(`--policy latest: timed out waiting for ${why} on ${this.options.origin}`);
      // the trainer may take minutes for a step: say every 10 s what the batch waits for
      if (Date.now() - told >= 10_000) {
        told = Date.now();
        const [waited, left] = [told - started, deadline - told].map((ms) => Math.round(ms / 1000));
        this.log(`batch ${batch} waiting for ${why}: ${waited} s, gives up in ${left} s`);
      }
      await this.wake(1000);
    }
    // The previous batch has finished (batches run one at a time): retired sessions are free.
    await Promise.all(this.retired.splice(0).map((p) => p.close?.()));
    this.batchesStarted++;
    this.batchesByVersion.set(
      this.current.version,
      (this.batchesByVersion.get(this.current.version) ?? 0) + 1,
    );
    return this.current;
  };

  /** Resolves once `version` (or a newer one) has been loaded; rejects after `timeoutMs`. */
  async waitForVersion(version: number, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((this.current?.version ?? -1) < version) {
      if (Date.now() > deadline)
        throw new Error(`policy v${version} did not arrive on ${this.options.origin} within ${timeoutMs} ms`);
      await this.wake(500);
    }
  }

  /** The version in use, or undefined before the first one loaded. */
  get version(): number | undefined {
    return this.current?.version;
  }

  /**
   * Loads the newest version offered, after the loads before it, unless one as new is loaded
   * already. Versions offered together (a policy topic read from its start) load only the newest:
   * `spa eval --policy latest` of a finished run then loads the final version as its first load,
   * with the seed as given, and so plays as `--policy onnx:<its folder>` does (a reload's seed is
   * offset: policies/resolve.ts).
   */
  offer(offered: PolicyUpdate): void {
    if (this.newest === undefined || offered.version > this.newest.version) this.newest = offered;
    this.loading = this.loading.then(async () => {
      const update = this.newest!;
      if (this.current !== undefined && update.version <= this.current.version) return;
      try {
        const policy = await this.options.load(update);
        // Keep the old session open: a batch that resolved it may still be running.
        if (this.current) this.retired.push(this.current);
        this.current = policy;
        this.startVersion ??= update.version;
        this.artifacts.set(update.version, update.uri);
        this.log(`policy v${update.version} (${update.stage} step ${update.step}) loaded from ${update.uri}`);
      } catch (error) {
        this.log(
          `policy v${update.version} not loaded, staying on v${this.current?.version ?? '-'}: ${String(error)}`,
        );
      }
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  /** Waits for the loads offered so far, then closes every version's session. */
  async close(): Promise<void> {
    await this.loading;
    await Promise.all([...this.retired, ...(this.current ? [this.current] : [])].map((p) => p.close?.()));
  }

  protected log(line: string): void {
    (this.options.log ?? ((l: string) => console.error(`[policy] ${l}`)))(line);
  }

  /** Sleeps until a load finishes or `ms` pass, then waits for the loads in flight. */
  private async wake(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.waiters.push(() => (clearTimeout(timer), resolve()));
    });
    await this.loading;
  }
}
