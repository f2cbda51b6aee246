import { randomUUID } from 'node:crypto';
import type { PolicyUpdate } from '../../schemas/index.js';
import { decodeKafkaRecord } from '../kafka/spa-records.js';
import type { KafkaTransport, RecordSource } from '../../infra/kafka/client/transport.js';
import { checkSchedule, oldestAdmissibleVersion } from '../../policies/admission.js';
import type { Policy } from '../../policies/policy.js';

export interface LatestPolicyOptions {
  readonly transport: KafkaTransport;
  /** The compacted policy topic (spa.policy). */
  readonly topic: string;
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
 * `--policy latest`: follows spa.policy and hands the newest loaded policy to each new batch of
 * episodes. Swaps happen only between batches (the episode loop resolves its policy once per
 * batch), so no episode mixes versions. A failed load is reported and the previous version
 * stays in use.
 */
export class LatestPolicy {
  private current: Policy | undefined;
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

  private constructor(
    private readonly options: LatestPolicyOptions,
    private readonly source: RecordSource,
  ) {}

  static async start(options: LatestPolicyOptions): Promise<LatestPolicy> {
    checkSchedule({ exportEvery: options.exportEvery ?? 1, maxStaleness: options.maxStaleness ?? 1 });
    // An ephemeral group reading the compacted topic from the start: the newest record wins.
    const source = await options.transport.source({
      groupId: `spa-policy-follower-${randomUUID()}`,
      topics: [options.topic],
      start: { kind: 'earliest' },
      ephemeral: true,
    });
    const follower = new LatestPolicy(options, source);
    if (options.resumedAt) {
      const { step, version } = options.resumedAt;
      follower.batchesStarted = step;
      follower.startVersion = version - Math.floor(step / (options.exportEvery ?? 1));
    }
    await source.run(async (batch) => {
      for (const consumed of batch.records) {
        const decoded = decodeKafkaRecord('PolicyUpdate', consumed);
        if (!decoded.ok) {
          follower.log(
            `ignoring undecodable record on ${options.topic}: ${decoded.rejected.reason}: ${decoded.rejected.detail}`,
          );
          continue;
        }
        follower.offer(decoded.record);
      }
    });
    return follower;
  }

  /** The policy-source function for `episodes()`: the policy for the next batch. */
  readonly next = async (): Promise<Policy> => {
    const deadline = Date.now() + (this.options.waitTimeoutMs ?? 600_000);
    await this.loading;
    const batch = this.batchesStarted;
    const { exportEvery = 1, maxStaleness = 1 } = this.options;
    const oldest = () =>
      oldestAdmissibleVersion(batch, { startVersion: this.startVersion ?? 0, exportEvery, maxStaleness });
    while (this.current === undefined || this.current.version < oldest()) {
      const why =
        this.current === undefined
          ? 'a first policy version'
          : `policy v${oldest()} for batch ${batch} (v${this.current.version} is loaded; exportEvery ` +
            `${exportEvery}, maxStaleness ${maxStaleness})`;
      if (Date.now() > deadline)
        throw new Error(`--policy latest: timed out waiting for ${why} on ${this.options.topic}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 1000);
        this.waiters.push(() => (clearTimeout(timer), resolve()));
      });
      await this.loading;
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
        throw new Error(`policy v${version} did not arrive on ${this.options.topic} within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 500);
        this.waiters.push(() => (clearTimeout(timer), resolve()));
      });
      await this.loading;
    }
  }

  /** The version in use, or undefined before the first one loaded. */
  get version(): number | undefined {
    return this.current?.version;
  }

  async close(): Promise<void> {
    await this.source.close();
    await this.loading;
    await Promise.all([...this.retired, ...(this.current ? [this.current] : [])].map((p) => p.close?.()));
  }

  private offer(update: PolicyUpdate): void {
    this.loading = this.loading.then(async () => {
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

  private log(line: string): void {
    (this.options.log ?? ((l: string) => console.error(`[policy] ${l}`)))(line);
  }
}
