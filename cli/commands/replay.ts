import { InvalidArgumentError, type Command } from 'commander';
import { fromEvent, take } from 'rxjs';
import { ANNOTATIONS, type Annotation } from '../../operators/annotate-ground-truth.js';
import type { ReadStart } from '../../streams/kafka/consume-spa.js';
import {
  REPLAY_TRAJECTORIES_PER_TRANSACTION,
  ReplayInputError,
  replayTrajectories,
  type ReplayCounts,
  type ReplaySummary,
} from '../../streams/kafka/replay.js';
import { parseFromOffset, parseFromTime } from '../../streams/kafka/replay-start.js';
import { connectSpaKafka } from '../../streams/kafka/spa-kafka.js';
import {
  addMalformedFilterOptions,
  malformedFilterOf,
  MAX_TRANSACTION_TRAJECTORIES,
  oneOf,
  positiveInt,
  UsageError,
} from '../options.js';
import type { EnvName } from '../../envs/types.js';
import { Progress } from '../progress.js';

interface ReplayCliOptions {
  fromTopic?: string;
  fromOffset?: ReadStart;
  fromTime?: ReadStart;
  toTopic: string;
  append: boolean;
  dlqTopic?: string;
  annotate: Annotation;
  maskTransitions: boolean;
  filterEnvs: EnvName[];
  filterParserReasons: boolean;
  follow: boolean;
  perTransaction: number;
}

/** Wraps a parser so commander reports its error as a bad argument. */
function argument<T>(parse: (text: string) => T): (text: string) => T {
  return (text) => {
    try {
      return parse(text);
    } catch (error) {
      throw new InvalidArgumentError((error as Error).message);
    }
  };
}

/** Adds the growth of the totals since the last call to the progress meter. */
function progressOf(progress: Progress): (totals: ReplayCounts) => void {
  const seen = new Map<string, number>();
  const add = (key: string, n: number): void => {
    const delta = n - (seen.get(key) ?? 0);
    if (delta > 0) progress.add(key, delta);
    seen.set(key, n);
  };
  return (totals) => {
    add('trajectories', totals.read);
    add('rows', totals.rows);
    add(
      'rejected',
      Object.values(totals.rejected).reduce((a, b) => a + b, 0),
    );
  };
}

/** Runs the replay; a refused topic (ReplayInputError) becomes a usage error: exit 2 (cli/main.ts). */
async function replayOrUsageError(...args: Parameters<typeof replayTrajectories>): Promise<ReplaySummary> {
  try {
    return await replayTrajectories(...args);
  } catch (error) {
    if (error instanceof ReplayInputError) throw new UsageError(error.message);
    throw error;
  }
}

/**
 * `spa replay`: re-runs stored raw trajectories through annotate → filter → SFT rows into
 * another topic (ablations from one generation run), transactionally; summary on stdout.
 */
export function registerReplayCommand(program: Command): void {
  const command = program
    .command('replay')
    .description('re-run stored trajectories (spa.trajectories) through the operators into another topic')
    .option('--from-topic <topic>', 'topic of Trajectory records (default: spa.trajectories)')
    .option(
      '--from-offset <N|p:N,…>',
      'start at offset N in every partition, or at p:N in the named partitions only',
      argument(parseFromOffset),
    )
    .option('--from-time <iso>', 'start at the first record at or after this time', argument(parseFromTime))
    .requiredOption(
      '--to-topic <topic>',
      "topic for the SftRows: a new one (created with spa.sft's config) or an empty one, unless --append",
    )
    .option(
      '--append',
      'write into a --to-topic that already holds records (without it such a replay stops, exit 2: a second replay would hold every row twice)',
      false,
    )
    .option('--dlq-topic <topic>', 'dead-letter topic (default: spa.dlq)')
    .option(
      '--annotate <kind>',
      `${ANNOTATIONS.join(' | ')} (docs/spa-data.md#ablations, #fill)`,
      oneOf('--annotate', ANNOTATIONS),
      'gt',
    )
    .option(
      '--mask-transitions',
      'flag rows so the trainer leaves the current and next state (<observation>/<prediction> contents) out of the SFT loss',
      false,
    )
    .option('--follow', 'keep replaying new trajectories after the end (Ctrl-C stops)', false)
    .option(
      '--per-transaction <n>',
      'trajectories per transaction',
      positiveInt('--per-transaction', MAX_TRANSACTION_TRAJECTORIES),
      REPLAY_TRAJECTORIES_PER_TRANSACTION,
    )
    .action(async (options: ReplayCliOptions) => {
      if (options.fromOffset && options.fromTime)
        throw new UsageError('give --from-offset or --from-time, not both');
      const kafka = await connectSpaKafka({ clientId: 'spa-replay' });
      const progress = new Progress('replay');
      try {
        const summary = await replayOrUsageError(kafka, {
          fromTopic: options.fromTopic ?? kafka.topics.trajectories,
          toTopic: options.toTopic,
          append: options.append,
          dlqTopic: options.dlqTopic ?? kafka.topics.dlq,
          start: options.fromOffset ?? options.fromTime ?? { kind: 'earliest' },
          follow: options.follow,
          annotation: options.annotate,
          maskTransitions: options.maskTransitions,
          malformedFilter: malformedFilterOf(options),
          trajectoriesPerTransaction: options.perTransaction,
          stop: fromEvent(process, 'SIGINT').pipe(take(1)),
          onCommitted: progressOf(progress),
        });
        progress.done();
        console.log(
          JSON.stringify({
            ...summary,
            ranges: summary.ranges.map((r) => ({
              partition: r.partition,
              start: Number(r.start),
              ...(r.end === undefined ? {} : { end: Number(r.end) }),
            })),
          }),
        );
      } finally {
        await kafka.close();
      }
    });
  addMalformedFilterOptions(command);
}
