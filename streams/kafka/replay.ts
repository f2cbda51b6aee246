/**
 * Replay: stored raw trajectories (spa.trajectories, the record of a run) re-run through the
 * operators into another topic — how ablations are made from one generation run (the log is
 * replayable from offset 0; docs/spa-data.md#ablations for the annotations). Reads with an ephemeral group,
 * writes transactionally: each transaction holds whole trajectories' outputs, and a source
 * record is acked only after its outputs are committed. Every topic is checked before anything
 * is created or written, and a target that already holds records is refused unless appending
 * (a second replay into it would silently hold every row twice). A run's trajectories topic holds
 * both the world-model SFT data (mode wm) and the PPO rollouts (mode base): a replay takes one mode,
 * by default wm, and says what it skipped.
 */
import { bufferTime, concatMap, filter, lastValueFrom, map, NEVER, of, takeUntil } from 'rxjs';
import type { Observable } from 'rxjs';
import type { KafkaAdmin } from '../../infra/kafka/client/admin.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import type { Annotation } from '../../operators/annotate-ground-truth.js';
import type { PromptMode } from '../../envs/protocol/index.js';
import type { Trajectory } from '../../schemas/index.js';
import type { Outbound } from '../../schemas/outbound.js';
import { spaTopics } from '../../schemas/topics.js';
import { toRejected, toSftOutputs, type SftDataOptions } from '../sft-outputs.js';
import { readTopic, type KafkaConnection, type PartitionRange, type ReadStart } from './consume-spa.js';
import { decodeSpaHeaders } from './headers.js';
import { TRANSACTION_MS } from './publish-outbound.js';
import type { InFlightRecord } from './rx-source.js';
import { decodeKafkaRecord, toKafkaRecord } from './spa-records.js';
import { withinTopicLimits, type OutgoingOutbound } from './too-large.js';

/** Options of {@link replayTrajectories}. */
export interface ReplayOptions extends SftDataOptions {
  /** Topic holding Trajectory records (usually spa.trajectories). */
  readonly fromTopic: string;
  /** Topic the SftRows go to; created with spa.sft's config when missing. */
  readonly toTopic: string;
  /** Write into a `toTopic` that already holds records (else {@link ReplayInputError}). Default false. */
  readonly append?: boolean;
  /** Dead-letter topic for undecodable records and filter rejects (usually spa.dlq). */
  readonly dlqTopic: string;
  readonly start: ReadStart;
  /** Keep replaying records written after the start (until `stop` emits). Default false. */
  readonly follow?: boolean;
  /**
   * Which trajectories to take, by the mode they were played in (Trajectory.mode): `wm` (world-model
   * prompts: the SFT data), `base` (PPO rollouts, evaluation) or `all`. Default `wm`.
   */
  readonly mode?: ReplayMode;
  /** Required here: the replay's point is the annotation (docs/spa-data.md#ablations). */
  readonly annotation: Annotation;
  /** Trajectories per transaction at most. Default {@link REPLAY_TRAJECTORIES_PER_TRANSACTION}. */
  readonly trajectoriesPerTransaction?: number;
  /** Ends the replay after the current transaction (e.g. on SIGINT while following). */
  readonly stop?: Observable<unknown>;
  /** Called after each committed transaction with the running totals. */
  readonly onCommitted?: (totals: ReplayCounts) => void;
  /** Progress lines such as "created topic …". Default: stderr. */
  readonly log?: (line: string) => void;
}

/**
 * Trajectories per replay transaction at most (a transaction also closes after
 * {@link TRANSACTION_MS}). 256 instead of 32 took the bench's full replay from ~230 to ~300
 * trajectories/s (docs/experiments/2026-11-25-kafka-throughput-levers.md); the read keeps 4× that
 * in flight (~6 MB).
 */
export const REPLAY_TRAJECTORIES_PER_TRANSACTION = 256;

/**
 * The trajectories a replay takes, by Trajectory.mode. No field names a run's stage; the mode is the
 * nearest reliable one: `spa run` plays its SFT data in wm and its PPO rollouts in base
 * (loop/sft-data.ts, loop/self-play-ppo.ts), while policy names and versions overlap (a random or oracle generator and
 * self-play v0 are version 0) and the stage in an episode id (`<run>-sft/…`, `<run>-rl/…`) is only
 * `spa run`'s naming.
 */
export const REPLAY_MODES = ['wm', 'base', 'all'] as const;
export type ReplayMode = (typeof REPLAY_MODES)[number];

/** Whether a replay in `mode` takes `trajectory`. */
export function takesTrajectory(mode: ReplayMode, trajectory: Pick<Trajectory, 'mode'>): boolean {
  return mode === 'all' || trajectory.mode === mode;
}

/** Trajectories by the mode they were played in. */
type ModeCounts = Partial<Record<PromptMode, number>>;

/** What trajectories of each mode are in a `spa run`: named when a replay skips them. */
const MODE_STAGE: Readonly<Record<PromptMode, string>> = {
  wm: 'world-model SFT data',
  base: 'PPO rollouts',
};

const count = (n: number): string => n.toLocaleString('en-US');
const sum = (counts: ModeCounts): number => Object.values(counts).reduce((a, b) => a + b, 0);
const perMode = (counts: ModeCounts): string =>
  Object.entries(counts)
    .map(([mode, n]) => `${count(n)} ${mode}`)
    .join(', ');

/**
 * The replay's one-line account of what it took and what it left out, e.g. `replayed 1,230
 * trajectories (wm) into 4,100 SFT rows; skipped 240 base-mode trajectories (PPO rollouts; --mode
 * all takes them)`.
 */
export function describeReplay(
  summary: Pick<ReplaySummary, 'mode' | 'replayed' | 'skipped' | 'rows'> &
    Partial<Pick<ReplaySummary, 'rejected'>>,
): string {
  const { mode, replayed, skipped, rows } = summary;
  const tooLarge = summary.rejected?.['too-large'] ?? 0;
  const which = mode === 'all' ? `all modes: ${perMode(replayed) || 'none'}` : mode;
  const took = `replayed ${count(sum(replayed))} trajectories (${which}) into ${count(rows)} SFT rows`;
  const left = Object.entries(skipped).map(
    ([skippedMode, n]) =>
      `skipped ${count(n)} ${skippedMode}-mode trajectories (${MODE_STAGE[skippedMode as PromptMode]}; --mode all takes them)`,
  );
  const dead =
    tooLarge > 0
      ? [
          `dead-lettered ${count(tooLarge)} records too large for their topic (reason too-large; "tooLarge" names them)`,
        ]
      : [];
  return [took, ...left, ...dead].join('; ');
}

/** Adds one to `mode`'s count. */
function countMode(counts: ModeCounts, mode: PromptMode): void {
  counts[mode] = (counts[mode] ?? 0) + 1;
}

/** Running totals of a replay. */
export interface ReplayCounts {
  /** Records read from the source topic. */
  read: number;
  /** Trajectories taken (of the replay's mode) and run through the operators, by mode. */
  replayed: ModeCounts;
  /** Trajectories left out because they were played in another mode, by that mode. */
  skipped: ModeCounts;
  /** SftRows written to the target topic. */
  rows: number;
  /** Dead letters written, by reason (decode failures, filter rejects, `too-large`). */
  rejected: Record<string, number>;
  /** The records dead-lettered as `too-large` (the first {@link TOO_LARGE_NAMED}): where each came from and why. */
  tooLarge: TooLargeNote[];
  transactions: number;
}

/** A record a replay dead-lettered because its topic could not take it. */
interface TooLargeNote {
  /** The source record it was made from, `<topic>[<partition>]@<offset>`. */
  readonly source: string;
  readonly key: string;
  /** The dead letter's detail: the record, its size, the topic's limit and what of it was kept. */
  readonly detail: string;
}

/** Too-large records a replay's summary names one by one (all are counted under `rejected`). */
const TOO_LARGE_NAMED = 100;

/** What a finished replay did. */
export interface ReplaySummary extends ReplayCounts {
  readonly from: string;
  readonly to: string;
  readonly dlq: string;
  readonly annotation: Annotation;
  readonly mode: ReplayMode;
  readonly groupId: string;
  readonly ranges: readonly PartitionRange[];
  readonly createdTarget: boolean;
  readonly elapsedMs: number;
}

/**
 * One trajectory through the generator's SFT branch (`toSftOutputs`): its accepted SftRows and a
 * dead letter per rejected row. The operators are synchronous, so subscribing collects every output.
 */
function replayTrajectory(trajectory: Trajectory, options: SftDataOptions, now = Date.now()): Outbound[] {
  const outputs: Outbound[] = [];
  of(trajectory)
    .pipe(toSftOutputs(options, () => now))
    .subscribe({ next: (o) => outputs.push(o) });
  return outputs;
}

/**
 * What became of one consumed record: a trajectory replayed into `outputs` (rows, dead letters),
 * one skipped for its mode, or an undecodable record's dead letter.
 */
interface RecordOutcome {
  readonly outputs: Outbound[];
  readonly replayed?: PromptMode;
  readonly skipped?: PromptMode;
}

/**
 * The outputs of one consumed record: undecodable or un-annotatable records become dead letters,
 * trajectories played in another mode than `mode` none.
 */
function outcomeOf(
  consumed: InFlightRecord['record'],
  mode: ReplayMode,
  options: SftDataOptions,
): RecordOutcome {
  const decoded = decodeKafkaRecord('Trajectory', consumed);
  if (!decoded.ok)
    return { outputs: [{ topic: 'dlq', key: decoded.rejected.key ?? '', record: decoded.rejected }] };
  if (!takesTrajectory(mode, decoded.record)) return { outputs: [], skipped: decoded.record.mode };
  return { outputs: outputsOf(decoded.record, options), replayed: decoded.record.mode };
}

/** A trajectory's outputs; one that cannot be annotated becomes a dead letter. */
function outputsOf(trajectory: Trajectory, options: SftDataOptions): Outbound[] {
  try {
    return replayTrajectory(trajectory, options);
  } catch (error) {
    // annotateGroundTruth throws on a trajectory without a state per turn: dead-letter it, carry on.
    const detail = error instanceof Error ? error.message : String(error);
    const key = trajectory.trajectory_id;
    const rejection = { key, source: 'annotateGroundTruth', reason: 'annotation-failed' as const };
    return [
      { topic: 'dlq', key, record: toRejected({ ...rejection, detail, value: trajectory }, Date.now()) },
    ];
  }
}

function traceparentOf(consumed: InFlightRecord['record']): string | undefined {
  try {
    return decodeSpaHeaders(consumed.headers).traceparent;
  } catch {
    return undefined;
  }
}

/** The totals of a replay that has done nothing yet. */
const noCounts = (): ReplayCounts => ({
  read: 0,
  replayed: {},
  skipped: {},
  rows: 0,
  rejected: {},
  tooLarge: [],
  transactions: 0,
});

/** Where a consumed record was read, as dead letters name it: `<topic>[<partition>]@<offset>`. */
const sourceOf = (consumed: InFlightRecord['record']): string =>
  `${consumed.topic}[${consumed.partition}]@${consumed.offset}`;

/** Counts one written output: an SFT row, or a dead letter by reason (a too-large one named too). */
function countOutput(totals: ReplayCounts, { outbound, source }: OutgoingOutbound): void {
  if (outbound.topic === 'sft') totals.rows += 1;
  if (outbound.topic !== 'dlq') return;
  const { reason, detail, key } = outbound.record;
  totals.rejected[reason] = (totals.rejected[reason] ?? 0) + 1;
  if (reason === 'too-large' && totals.tooLarge.length < TOO_LARGE_NAMED)
    totals.tooLarge.push({ source: source ?? '', key: key ?? '', detail });
}

/** A replay refused before it read or created anything: a topic named in its options is wrong. */
export class ReplayInputError extends Error {
  override readonly name = 'ReplayInputError';
}

/** Σ (high − low) over the partitions of `topic`: its records, transaction markers included. */
async function offsetsHeld(admin: KafkaAdmin, topic: string): Promise<bigint> {
  return (await admin.topicOffsets(topic)).reduce((sum, p) => sum + (p.high - p.low), 0n);
}

/**
 * Checks the topics before anything is created: the source and the DLQ exist (auto-create is off,
 * so a missing DLQ would fail the first reject mid-replay), and the target is new, empty, or
 * `append` is set. True when the target exists.
 */
async function checkTopics(kafka: KafkaConnection, options: ReplayOptions): Promise<boolean> {
  const { fromTopic, toTopic, dlqTopic } = options;
  if (fromTopic === toTopic || toTopic === dlqTopic)
    throw new ReplayInputError(
      `--to-topic "${toTopic}" must differ from the source "${fromTopic}" and the DLQ "${dlqTopic}"`,
    );
  const admin = await kafka.transport.admin();
  try {
    const existing = await admin.listTopics();
    for (const [flag, topic] of [
      ['--from-topic', fromTopic],
      ['--dlq-topic', dlqTopic],
    ] as const) {
      if (existing.includes(topic)) continue;
      const names = existing.filter((name) => !name.startsWith('__')).sort();
      throw new ReplayInputError(
        `${flag} "${topic}" does not exist; existing topics: ${names.join(', ') || 'none'}`,
      );
    }
    if (!existing.includes(toTopic)) return false;
    const held = options.append ? 0n : await offsetsHeld(admin, toTopic);
    if (held > 0n)
      throw new ReplayInputError(
        `--to-topic "${toTopic}" already holds ${held} records (offsets, transaction markers included); ` +
          'replaying into it would add a second copy. Give --append to add to it anyway, or name a new topic',
      );
    return true;
  } finally {
    await admin.close();
  }
}

/** Creates `topic` with spa.sft's definition. */
async function createSftTopic(kafka: KafkaConnection, topic: string): Promise<void> {
  const definition = spaTopics({ names: { sft: topic } }).filter((t) => t.role === 'sft');
  await applyTopicsTo(kafka.config.brokers, definition, kafka.config);
}

/**
 * Replays Trajectory records from `fromTopic` (read_committed, ephemeral group, up to the end
 * offsets captured at start unless following) into SftRows on `toTopic`, rejects and
 * undecodable records on `dlqTopic`, one transaction per chunk of trajectories.
 */
export async function replayTrajectories(
  kafka: KafkaConnection,
  options: ReplayOptions,
): Promise<ReplaySummary> {
  const started = Date.now();
  const log = options.log ?? ((line: string) => console.error(line));
  const perTransaction = options.trajectoriesPerTransaction ?? REPLAY_TRAJECTORIES_PER_TRANSACTION;
  const targetExists = await checkTopics(kafka, options);
  // Resolving the read checks the start (e.g. --from-offset partitions) before the target is made.
  const read = await readTopic(kafka, {
    topic: options.fromTopic,
    start: options.start,
    follow: options.follow ?? false,
    purpose: 'spa-replay',
    // More than one transaction's worth, so a chunk can fill while the previous one commits.
    maxInFlight: perTransaction * 4,
  });
  if (!targetExists) {
    await createSftTopic(kafka, options.toTopic);
    log(`[replay] created topic ${options.toTopic} with spa.sft's config`);
  }
  const sink = await kafka.transport.sink({ transactionalId: `${read.groupId}-tx` });
  const topicOf = {
    trajectories: options.fromTopic,
    sft: options.toTopic,
    rollouts: options.toTopic,
    dlq: options.dlqTopic,
  };
  const mode = options.mode ?? 'wm';
  const totals = noCounts();
  try {
    await lastValueFrom(
      read.records.pipe(
        takeUntil(options.stop ?? NEVER),
        map((inFlight) => ({ inFlight, ...outcomeOf(inFlight.record, mode, options) })),
        // Bounded by `perTransaction` entries; a trickle while following is flushed every TRANSACTION_MS.
        bufferTime(TRANSACTION_MS, null, perTransaction),
        filter((chunk) => chunk.length > 0),
        concatMap(async (chunk) => {
          const outgoing: OutgoingOutbound[] = chunk.flatMap(({ inFlight, outputs }) =>
            outputs.map((outbound) => ({
              outbound,
              record: toKafkaRecord(outbound, topicOf[outbound.topic], traceparentOf(inFlight.record)),
              source: sourceOf(inFlight.record),
            })),
          );
          // A record its topic cannot take goes to the DLQ as `too-large`, naming its source offset.
          const fitted = await withinTopicLimits(sink, outgoing, options.dlqTopic);
          if (fitted.length > 0) await sink.transaction((tx) => tx.send(fitted.map((item) => item.record)));
          for (const { inFlight, replayed, skipped } of chunk) {
            inFlight.ack();
            totals.read += 1;
            if (replayed) countMode(totals.replayed, replayed);
            if (skipped) countMode(totals.skipped, skipped);
          }
          for (const item of fitted) countOutput(totals, item);
          totals.transactions += fitted.length > 0 ? 1 : 0;
          options.onCommitted?.(totals);
        }),
      ),
      { defaultValue: undefined },
    );
  } finally {
    await sink.close();
    await read.closed;
  }
  return {
    ...totals,
    from: options.fromTopic,
    to: options.toTopic,
    dlq: options.dlqTopic,
    annotation: options.annotation,
    mode,
    groupId: read.groupId,
    ranges: read.ranges,
    createdTarget: !targetExists,
    elapsedMs: Date.now() - started,
  };
}
