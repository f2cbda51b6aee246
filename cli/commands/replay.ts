import { InvalidArgumentError, type Command } from 'commander';
import { fromEvent, take } from 'rxjs';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import { ANNOTATIONS, type Annotation } from '../../operators/annotate-ground-truth.js';
import { spaTopics } from '../../schemas/topics.js';
import type { ReadStart } from '../../streams/kafka/consume-spa.js';
import {
  describeReplay,
  REPLAY_MODES,
  REPLAY_TRAJECTORIES_PER_TRANSACTION,
  ReplayInputError,
  replayTrajectories,
  type ReplayCounts,
  type ReplayMode,
  type ReplaySummary,
} from '../../streams/kafka/replay.js';
import { parseFromOffset, parseFromTime } from '../../streams/kafka/replay-start.js';
import { connectSpaKafka, type SpaKafka } from '../../streams/kafka/spa-kafka.js';
import {
  addMalformedFilterOptions,
  malformedFilterOf,
  MAX_TRANSACTION_TRAJECTORIES,
  oneOf,
  positiveInt,
  UsageError,
} from '../options.js';
import type { EnvName } from '../../envs/types.js';
import { Progress } from '../../loop/progress.js';
import {
  brokerTopics,
  pickRun,
  runIdArgument,
  runReplayDlqTopic,
  runReplayTopic,
  runTopicNames,
} from '../run-topics.js';
import { COMMAND_SUMMARIES } from './summaries.js';

interface ReplayCliOptions {
  fromTopic?: string;
  fromOffset?: ReadStart;
  fromTime?: ReadStart;
  toTopic?: string;
  run?: string;
  append: boolean;
  dlqTopic?: string;
  annotate: Annotation;
  mode: ReplayMode;
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
 * The replay's topics: the flags, else `--run`'s (`last`: the newest run; cli/run-topics.ts), else
 * spa.*. Without `--run` the action has made sure `--to-topic` is given.
 */
async function replayTopics(
  kafka: SpaKafka,
  options: ReplayCliOptions,
): Promise<{ fromTopic: string; toTopic: string; dlqTopic: string }> {
  const runId = options.run && pickRun(await brokerTopics(kafka), options.run, 'runs').runId;
  const defaults = runId ? runTopicNames(runId) : kafka.topics;
  const replayDlq = runId && runReplayDlqTopic(runId, options.annotate, options.maskTransitions);
  // The replay's own dead-letter topic is made here, with spa.dlq's config; a named one must exist.
  if (replayDlq && options.dlqTopic === undefined) {
    const definition = spaTopics({ names: { dlq: replayDlq } }).filter((t) => t.role === 'dlq');
    await applyTopicsTo(kafka.config.brokers, definition, kafka.config);
  }
  return {
    fromTopic: options.fromTopic ?? defaults.trajectories,
    toTopic: options.toTopic ?? runReplayTopic(runId ?? '', options.annotate, options.maskTransitions),
    dlqTopic: options.dlqTopic ?? (replayDlq || defaults.dlq),
  };
}

/**
 * `spa replay`: re-runs stored raw trajectories through annotate → filter → SFT rows into
 * another topic (ablations from one generation run), transactionally; summary on stdout.
 */
export function registerReplayCommand(program: Command): void {
  const command = program
    .command('replay')
    .description(COMMAND_SUMMARIES.replay)
    .option(
      '--run <id>',
      "replay `spa run --run-id <id>`'s topics: --from-topic, --to-topic and --dlq-topic default to spa.<id>.trajectories, spa.<id>.replay-<annotate>.sft and spa.<id>.replay-<annotate>.dlq",
      runIdArgument,
    )
    .option('--from-topic <topic>', 'topic of Trajectory records (default: spa.trajectories)')
    .option(
      '--from-offset <N|p:N,…>',
      'start at offset N in every partition, or at p:N in the named partitions only',
      argument(parseFromOffset),
    )
    .option('--from-time <iso>', 'start at the first record at or after this time', argument(parseFromTime))
    .option(
      '--to-topic <topic>',
      "topic for the SftRows: a new one (created with spa.sft's config) or an empty one, unless --append (required without --run)",
    )
    .option(
      '--append',
      'write into a --to-topic that already holds records (without it such a replay stops, exit 2: a second replay would hold every row twice)',
      false,
    )
    .option('--dlq-topic <topic>', "dead-letter topic (default: spa.dlq; with --run the replay's own)")
    .option(
      '--annotate <kind>',
      `${ANNOTATIONS.join(' | ')} (docs/spa-data.md#ablations, #fill)`,
      oneOf('--annotate', ANNOTATIONS),
      'gt',
    )
    .option(
      '--mode <mode>',
      "which trajectories to take, by the prompt mode they were played in: wm (world-model prompts, a run's SFT data), base (PPO rollouts), all",
      oneOf('--mode', REPLAY_MODES),
      'wm',
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
      // Before a broker is touched; with --run the default comes from the run (replayTopics).
      if (options.toTopic === undefined && options.run === undefined)
        throw new UsageError('spa replay needs --to-topic <topic> (or --run <id>)');
      const kafka = await connectSpaKafka({ clientId: 'spa-replay' });
      const progress = new Progress('replay');
      try {
        const topics = await replayTopics(kafka, options);
        const summary = await replayOrUsageError(kafka, {
          ...topics,
          append: options.append,
          start: options.fromOffset ?? options.fromTime ?? { kind: 'earliest' },
          follow: options.follow,
          annotation: options.annotate,
          mode: options.mode,
          maskTransitions: options.maskTransitions,
          malformedFilter: malformedFilterOf(options),
          trajectoriesPerTransaction: options.perTransaction,
          stop: fromEvent(process, 'SIGINT').pipe(take(1)),
          onCommitted: progressOf(progress),
        });
        progress.done();
        console.error(`[replay] ${describeReplay(summary)}`);
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
