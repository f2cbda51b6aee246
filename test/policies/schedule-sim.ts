/**
 * A deterministic discrete-event simulation of `spa run`'s self-play + PPO stage, without a model:
 * the generator starts batches through the real {@link LatestPolicy} (over an in-memory policy
 * topic), and a model of `spa_trainer.ppo_service` trains one batch per step and exports on its
 * schedule ({@link ppoExportDue}, checked against the Python service through a shared fixture).
 * Staleness is measured on the trainer's side, as the service counts it, independently of the
 * admission rule under test.
 */
import { vi } from 'vitest';
import { fingerprintHex, spaSchemas, type PolicyUpdate } from '../../schemas/index.js';
import { encodeSpaHeaders } from '../../streams/kafka/headers.js';
import type { BatchHandler, KafkaTransport, RecordSource } from '../../infra/kafka/client/transport.js';
import { LatestPolicy } from '../../streams/policies/latest-policy.js';
import type { Policy } from '../../policies/policy.js';

/** Whether PPO step `step` (1-based) of `steps` exports: every `exportEvery` steps and the last. */
export function ppoExportDue(step: number, steps: number, exportEvery: number): boolean {
  return step % exportEvery === 0 || step === steps;
}

export interface SimSchedule {
  readonly steps: number;
  readonly exportEvery: number;
  readonly maxStaleness: number;
  /**
   * A resumed run: the trainer restarts from its checkpoint after this many steps, and the
   * compacted policy topic holds only the newest version. The result's arrays then start there.
   */
  readonly resumeAfter?: number;
}

/** Durations in ticks of virtual time. */
export interface SimTiming {
  readonly generatorBatch: number;
  readonly trainerStep: number;
  /** From the end of an exporting step until the generator has loaded the new version. */
  readonly exportAndLoad: number;
}

export interface SimResult {
  /** Every batch generated and every step trained. */
  readonly finished: boolean;
  /** The version each batch started with (index = batch). */
  readonly batchVersions: readonly number[];
  /** The trainer's version during each step (index = step − 1). */
  readonly trainerVersions: readonly number[];
  /** Each moment the generator was waiting: the batch it wanted to start and the version loaded then. */
  readonly waits: readonly { readonly batch: number; readonly loaded: number }[];
  /** How the run ended, for failure messages. */
  readonly detail: string;
}

const START_VERSION = 1; // the SFT policy, the only version on the topic when PPO starts
const WAIT_TIMEOUT_MS = 60_000;

/** Runs the schedule to completion or until nothing can happen any more. Needs fake setTimeout/Date. */
export async function simulateSchedule(schedule: SimSchedule, timing: SimTiming): Promise<SimResult> {
  const done = schedule.resumeAfter ?? 0;
  const exported = Array.from({ length: done }, (_, i) => i + 1).filter((step) =>
    ppoExportDue(step, schedule.steps, schedule.exportEvery),
  ).length;
  let trainerVersion = START_VERSION + exported;
  const topic = new PolicyTopic();
  await topic.publish(trainerVersion);
  const follower = await LatestPolicy.start({
    transport: topic.transport,
    topic: 'sim.policy',
    maxStaleness: schedule.maxStaleness,
    exportEvery: schedule.exportEvery,
    ...(done > 0 ? { resumedAt: { step: done, version: trainerVersion } } : {}),
    waitTimeoutMs: WAIT_TIMEOUT_MS,
    load: async (update): Promise<Policy> => ({ name: 'sim', version: update.version, act: async () => [] }),
    log: () => {},
  });
  const events = new EventQueue();
  const batchVersions: number[] = [];
  const trainerVersions: number[] = [];
  const waits: { batch: number; loaded: number }[] = [];
  let waiting: { promise: Promise<Policy>; settled?: Policy } | undefined;
  let generatorBusy = false;
  let batchesDone = 0;
  let trainerBusy = false;

  const startBatch = (now: number, policy: Policy) => {
    batchVersions.push(policy.version);
    generatorBusy = true;
    events.at(now + timing.generatorBatch, () => {
      generatorBusy = false;
      batchesDone++;
      return Promise.all([generate(now + timing.generatorBatch), train(now + timing.generatorBatch)]);
    });
  };
  // The generator asks for its next batch's policy; if it is not granted at once, it waits.
  const generate = async (now: number) => {
    if (generatorBusy || waiting || batchVersions.length >= schedule.steps - done) return;
    const pending: { promise: Promise<Policy>; settled?: Policy } = { promise: follower.next() };
    void pending.promise.then((p) => (pending.settled = p)).catch(() => {});
    await settle();
    if (pending.settled) return startBatch(now, pending.settled);
    waiting = pending;
    waits.push({ batch: batchVersions.length, loaded: follower.version ?? -1 });
  };
  const train = (now: number) => {
    const step = done + trainerVersions.length + 1;
    if (trainerBusy || step > schedule.steps || batchesDone < step - done) return;
    trainerBusy = true;
    trainerVersions.push(trainerVersion);
    events.at(now + timing.trainerStep, () => {
      trainerBusy = false;
      if (ppoExportDue(step, schedule.steps, schedule.exportEvery)) {
        const version = ++trainerVersion;
        events.at(now + timing.trainerStep + timing.exportAndLoad, (t) => loaded(t, version));
      }
      train(now + timing.trainerStep);
    });
  };
  const loaded = async (now: number, version: number) => {
    await topic.publish(version);
    await settle();
    if (!waiting) return;
    if (waiting.settled) {
      const policy = waiting.settled;
      waiting = undefined;
      return startBatch(now, policy);
    }
    waits.push({ batch: batchVersions.length, loaded: follower.version ?? -1 });
  };

  await generate(0);
  await events.run();
  const left = schedule.steps - done;
  const finished = batchVersions.length === left && trainerVersions.length === left;
  const detail = finished
    ? 'finished'
    : `stuck after ${batchVersions.length} batches and ${trainerVersions.length} steps, ` +
      `the generator waiting on v${follower.version ?? '-'} for batch ${batchVersions.length}`;
  if (waiting) {
    // Let the stuck follower time out, so no timer outlives the simulation.
    await vi.advanceTimersByTimeAsync(WAIT_TIMEOUT_MS + 2_000);
  }
  await follower.close();
  return { finished, batchVersions, trainerVersions, waits, detail };
}

/** Lets every pending promise reaction run (the follower's loading chain and wake-ups). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Events in virtual time, earliest first; ties in the order they were scheduled. */
class EventQueue {
  private readonly queue: { time: number; seq: number; run: (now: number) => unknown }[] = [];
  private seq = 0;

  at(time: number, run: (now: number) => unknown): void {
    this.queue.push({ time, seq: this.seq++, run });
    this.queue.sort((a, b) => a.time - b.time || a.seq - b.seq);
  }

  async run(): Promise<void> {
    for (let event = this.queue.shift(); event; event = this.queue.shift()) await event.run(event.time);
  }
}

/** An in-memory compacted policy topic that hands every PolicyUpdate to the follower's handler. */
class PolicyTopic {
  private handler: BatchHandler | undefined;
  private readonly backlog: number[] = [];
  private offset = 0n;

  readonly transport: KafkaTransport = {
    sink: () => Promise.reject(new Error('the simulation has no sink')),
    admin: () => Promise.reject(new Error('the simulation has no admin')),
    source: async (): Promise<RecordSource> => ({
      run: async (handler) => {
        this.handler = handler;
        for (const version of this.backlog.splice(0)) await this.deliver(version);
      },
      pause: () => {},
      resume: () => {},
      seek: () => {},
      commit: async () => {},
      close: async () => {},
    }),
    close: async () => {},
  };

  async publish(version: number): Promise<void> {
    if (this.handler) await this.deliver(version);
    else this.backlog.push(version);
  }

  private async deliver(version: number): Promise<void> {
    const update: PolicyUpdate = {
      version,
      uri: `sim/v${version}`,
      sha256: '0'.repeat(64),
      stage: version === START_VERSION ? 'sft' : 'ppo',
      step: version - START_VERSION,
      model: 'sim',
      format: 'onnx',
      created_at: 0,
    };
    const offset = this.offset++;
    await this.handler!({
      topic: 'sim.policy',
      partition: 0,
      highWatermark: this.offset,
      records: [
        {
          topic: 'sim.policy',
          partition: 0,
          offset,
          key: Buffer.from('policy'),
          value: spaSchemas().encode('PolicyUpdate', update),
          headers: encodeSpaHeaders({
            policyVersion: version,
            schemaFingerprint: fingerprintHex(spaSchemas().current('PolicyUpdate').fingerprint),
          }),
          timestamp: 0,
        },
      ],
    });
  }
}
