import { InvalidArgumentError, type Command } from 'commander';
import type { PromptMode } from '../../envs/protocol/index.js';
import { ENV_NAMES, envFactory, parseEnvName, type PuzzleSource } from '../../envs/registry.js';
import type { EnvName } from '../../envs/types.js';
import { ANNOTATIONS, type Annotation } from '../../operators/annotate-ground-truth.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { shardTransactionalId, UNSHARDED, type Shard } from '../../streams/episodes/shard.js';
import { jsonlPathsBeside } from '../../streams/files/jsonl-sink.js';
import { generateToJsonl, generateToKafka, type GeneratorRun } from '../../streams/generator-sinks.js';
import { connectSpaKafka, type SpaKafka } from '../../streams/kafka/spa-kafka.js';
import { builtinPolicy } from '../../policies/builtin.js';
import { POLICY_SPEC_HELP, resolvePolicy, type ResolvedPolicy } from '../../streams/policies/resolve.js';
import { withTelemetry } from '../../streams/telemetry/telemetry.js';
import { withConfigFile } from '../config/command-config.js';
import {
  addGenerationOptions,
  addMalformedFilterOptions,
  checkEpisodeLimits,
  checkTelemetry,
  malformedFilterOf,
  MAX_ACTIONS_PER_TURN,
  MAX_BATCH_EPISODES,
  MAX_BATCHES,
  MAX_GROUP_SIZE,
  MAX_GROUPS,
  MAX_STALENESS,
  nonNegativeInt,
  oneOf,
  port,
  positiveInt,
  probability,
  seedNumber,
  shardOf,
  UsageError,
} from '../options.js';
import { checkOutputFile } from '../output-paths.js';
import { trajectoryProgress } from '../../loop/progress.js';
import { refuseOtherRunsTopics } from '../run-topics.js';
import { COMMAND_SUMMARIES } from './summaries.js';

/** `spa generate`'s flags as commander parses them. */
interface GenerateFlags {
  env: string;
  variant?: string;
  policy: string;
  maxNewTokens?: number;
  stopAtAnswer: boolean;
  contextWindow?: number;
  maxStaleness: number;
  exportEvery: number;
  resumedAt?: ResumedAt;
  groups: number;
  groupSize: number;
  batches: number;
  split: 'train' | 'val';
  puzzles: PuzzleSource;
  target: 'sft' | 'rollouts';
  prompts?: PromptMode;
  annotation: Annotation;
  maskTransitions: boolean;
  filterEnvs: EnvName[];
  filterParserReasons: boolean;
  seedBase?: number;
  policySeed: number;
  oracleActionsPerTurn?: number;
  oracleExplore?: number;
  spaFallbackBug: boolean;
  runId: string;
  shard?: Shard;
  topicPrefix: string;
  append: boolean;
  out: string;
  device: 'cpu' | 'cuda';
  metricsPort?: number;
  otlpEndpoint?: string;
}

/** `spa generate`: self-play data generation into JSON Lines files or Kafka's spa.* topics. */
export function registerGenerateCommand(program: Command): void {
  const command = program
    .command('generate')
    .description(COMMAND_SUMMARIES.generate)
    .requiredOption('--env <env>', `environment: ${ENV_NAMES.join(' | ')}`)
    .option('--variant <name>', "puzzle variant (default: SPA's)")
    .option('--policy <spec>', `generator policy: ${POLICY_SPEC_HELP}`, 'random')
    .option(
      '--groups <n>',
      `env groups per batch (one puzzle each); groups × group size at most ${MAX_BATCH_EPISODES}`,
      positiveInt('--groups', MAX_GROUPS),
      32,
    )
    .option(
      '--group-size <n>',
      'episodes per group (same puzzle)',
      positiveInt('--group-size', MAX_GROUP_SIZE),
      8,
    )
    .option('--batches <n>', 'rollout batches', positiveInt('--batches', MAX_BATCHES), 5)
    .option(
      '--split <split>',
      'train (seeds from 10000) | val (seeds from 123)',
      oneOf('--split', ['train', 'val'] as const),
      'train',
    )
    .option(
      '--puzzles <source>',
      "generated | spa (the paper's own puzzles)",
      oneOf('--puzzles', ['generated', 'spa'] as const),
      'generated',
    )
    .option(
      '--seed-base <n>',
      "first puzzle seed (default: SPA's 10000 train / 123 val); the last seed, + batches × groups − 1 (val: + groups − 1), must stay within the range too",
      seedNumber('--seed-base'),
    )
    .option('--policy-seed <n>', 'seed of the random policy', seedNumber('--policy-seed'), 0)
    .option(
      '--oracle-actions-per-turn <n>',
      '--policy oracle: actions per turn, i.e. how much of its shortest plan it writes (default 5)',
      positiveInt('--oracle-actions-per-turn', MAX_ACTIONS_PER_TURN),
    )
    .option(
      '--oracle-explore <rate>',
      '--policy oracle with 1 action per turn: probability of a random action instead of the plan (seeded by --policy-seed)',
      probability('--oracle-explore'),
    )
    .option(
      '--spa-fallback-bug',
      "reproduce SPA's string-fallback parser bug (docs/spa-protocol.md#world-model)",
      false,
    )
    .option(
      '--device <device>',
      'ONNX policies: cpu | cuda',
      oneOf('--device', ['cpu', 'cuda'] as const),
      'cpu',
    )
    .option('--run-id <id>', 'id prefix of every trajectory', `gen-${Date.now()}`)
    .option(
      '--shard <i/n>',
      "play only shard i of n (0-based) of the run's groups (a group: the --group-size episodes of one puzzle; group k of the run goes to shard k mod n); n processes with the same flags and shards 0/n … n-1/n commit what one generator would, each under its own transactional id (--out kafka)",
      shardOf('--shard'),
    )
    .option(
      '--topic-prefix <prefix>',
      '--out kafka: topic names are <prefix>trajectories, <prefix>sft, …',
      'spa.',
    )
    .option(
      '--append',
      "--out kafka: write into topics that hold other runs' records (a finished spa run's, an earlier generate's); without it such a run stops, exit 2. Not needed to resume the same --run-id",
      false,
    )
    .requiredOption(
      '--out <file.jsonl|kafka>',
      'a JSONL file (rejects to <file>.rejected.jsonl, raw trajectories to <file>.trajectories.jsonl) or kafka (KAFKA_BROKERS, else the local broker; a restart with the same flags and --run-id plays only what the killed attempt did not commit)',
    )
    .option(
      '--metrics-port <port>',
      'serve spa_* metrics at http://127.0.0.1:<port>/metrics',
      port('--metrics-port'),
    )
    .option('--otlp-endpoint <url>', 'send traces and metrics over OTLP/HTTP, e.g. http://127.0.0.1:4318')
    .action((options: GenerateFlags) =>
      withTelemetry(
        checkTelemetry({
          serviceName: 'spa-generator',
          metricsPort: options.metricsPort,
          otlpEndpoint: options.otlpEndpoint,
        }),
        () => generate(options),
      ),
    );
  addRecordOptions(command);
  addLatestPolicyOptions(command);
  addGenerationOptions(command);
  addMalformedFilterOptions(command);
  withConfigFile(command);
}

/** What the episodes become: SFT rows or rollouts, from which prompts, with which states. */
function addRecordOptions(command: Command): void {
  command
    .option(
      '--target <target>',
      'sft (world-model rows) | rollouts (PPO episodes, base mode)',
      oneOf('--target', ['sft', 'rollouts'] as const),
      'sft',
    )
    .option(
      '--prompts <mode>',
      'wm | base: the prompts the episodes are played with (default: wm for sft, base for rollouts; sft rows of base prompts keep what a tiny model answers there, docs/spa-loop.md#sft-mix)',
      oneOf('--prompts', ['wm', 'base'] as const),
    )
    .option(
      '--annotation <kind>',
      `${ANNOTATIONS.join(' | ')} (docs/spa-data.md#ablations, #fill)`,
      oneOf('--annotation', ANNOTATIONS),
      'gt',
    )
    .option(
      '--mask-transitions',
      "flag rows so the trainer leaves the current and next state (<observation>/<prediction> contents) out of the SFT loss: the paper's masking ablation",
      false,
    );
}

/** `--policy latest`'s options: the trainer's schedule, and where a resumed trainer stands. */
function addLatestPolicyOptions(command: Command): void {
  command
    .option(
      '--max-staleness <n>',
      "--policy latest: the trainer's --max-staleness; a batch waits for a version that keeps its records at most this many versions old",
      nonNegativeInt('--max-staleness', MAX_STALENESS),
      1,
    )
    .option(
      '--export-every <n>',
      "--policy latest: the trainer's --export-every (it publishes a version every n steps of one batch each)",
      positiveInt('--export-every', MAX_BATCHES),
      1,
    )
    .option(
      '--resumed-at <step:version>',
      '--policy latest: the trainer resumed after <step> steps at policy <version>, so the first batch is batch <step> (spa run passes it when it resumes PPO)',
      resumedAtArgument,
    );
}

async function generate(options: GenerateFlags): Promise<void> {
  const env = parseEnvName(options.env);
  const mode = options.prompts ?? (options.target === 'sft' ? 'wm' : 'base');
  const config = episodeConfig({
    env,
    variant: options.variant,
    runId: options.runId,
    split: options.split,
    mode,
    puzzles: options.puzzles,
    groups: options.groups,
    groupSize: options.groupSize,
    batches: options.batches,
    seedBase: options.seedBase,
    reproduceSpaFallbackBug: options.spaFallbackBug,
    shard: options.shard,
  });
  const shard = options.shard ?? UNSHARDED;
  // Usage errors first, before a broker, a policy or an episode is touched.
  checkEpisodeLimits(config, {
    groups: '--groups',
    groupSize: '--group-size',
    batches: '--batches',
    seedBase: '--seed-base',
  });
  if (shard.count > 1 && options.out !== 'kafka')
    throw new UsageError(
      `--shard ${shard.index}/${shard.count} needs --out kafka (shards share the run's topics), got --out ${options.out}`,
    );
  checkPolicyFlags(options);
  const paths = options.out === 'kafka' ? {} : jsonlPathsBeside(options.out, options.target);
  for (const path of Object.values(paths)) checkOutputFile('--out', path);
  const kafka = await generatorKafka(options);
  const policy = await generatorPolicy(options, mode, kafka);
  try {
    const progress = trajectoryProgress('generate', config);
    const rejectsByReason: Record<string, number> = {};
    const run: GeneratorRun = {
      episodes: config,
      makeEnv: envFactory({ name: env, variant: config.variant, puzzles: options.puzzles }),
      policy: policy.source,
      pipeline: {
        target: options.target,
        annotation: options.annotation,
        maskTransitions: options.maskTransitions,
        malformedFilter: malformedFilterOf(options),
      },
      onRecord: (o) => {
        progress.add(o.topic);
        if (o.topic === 'dlq') rejectsByReason[o.record.reason] = (rejectsByReason[o.record.reason] ?? 0) + 1;
      },
    };
    if (kafka && options.out === 'kafka') {
      let resumed = 0;
      const transactionalId = shardTransactionalId(`spa-generate-${options.runId}`, shard);
      const counts = await generateToKafka(kafka, transactionalId, {
        ...run,
        resume: true,
        onResume: (committed) => {
          resumed = committed;
          if (committed === 0) return;
          process.stderr.write(
            `[generate] ${committed} trajectories of this run${shard.count > 1 ? ` (shard ${shard.index}/${shard.count})` : ''} were committed by an earlier attempt: playing the rest\n`,
          );
          progress.add('trajectories', committed);
        },
      });
      progress.done();
      console.log(
        JSON.stringify({
          out: 'kafka',
          brokers: kafka.config.brokers,
          topics: kafka.topics,
          shard,
          transactionalId,
          counts,
          rejectsByReason,
          resumed,
          ...versions(policy),
        }),
      );
      return;
    }
    const counts = await generateToJsonl(paths, run);
    progress.done();
    console.log(
      JSON.stringify({ out: options.out, files: paths, counts, rejectsByReason, ...versions(policy) }),
    );
  } finally {
    await policy.close();
    await kafka?.close();
  }
}

/**
 * Kafka, needed for `--out kafka` and for `--policy latest` (it follows spa.policy). With `--out
 * kafka` and without `--append`, its topics must hold no other run's records (cli/run-topics.ts).
 */
async function generatorKafka(options: GenerateFlags): Promise<SpaKafka | undefined> {
  if (options.out !== 'kafka' && options.policy !== 'latest') return undefined;
  const kafka = await connectSpaKafka({ clientId: 'spa-generate', topics: { prefix: options.topicPrefix } });
  if (options.out !== 'kafka' || options.append) return kafka;
  try {
    await refuseOtherRunsTopics(kafka, options.runId, [
      kafka.topics.trajectories,
      kafka.topics[options.target],
    ]);
    return kafka;
  } catch (error) {
    await kafka.close();
    throw error;
  }
}

/** The oracle's flags against `--policy` and `--group-size`: they go together or not at all. */
function checkPolicyFlags(options: GenerateFlags): void {
  const perTurn = options.oracleActionsPerTurn;
  const explore = options.oracleExplore;
  if (options.policy === 'oracle' && !(explore !== undefined && explore > 0) && options.groupSize > 1)
    throw new UsageError(
      `--policy oracle with --group-size ${options.groupSize}: the oracle is deterministic, so every member of a group would be the same trajectory (docs/spa-data.md#groups); use --group-size 1, or --oracle-actions-per-turn 1 --oracle-explore <rate> for members that differ`,
    );
  if (explore !== undefined && perTurn !== 1)
    throw new UsageError(`--oracle-explore needs --oracle-actions-per-turn 1, got ${perTurn ?? 'none'}`);
  if (options.resumedAt && options.policy !== 'latest')
    throw new UsageError(`--resumed-at needs --policy latest, got --policy ${options.policy}`);
  if (perTurn !== undefined && options.policy !== 'oracle')
    throw new UsageError(
      `--oracle-actions-per-turn ${perTurn} needs --policy oracle, got --policy ${options.policy}`,
    );
}

/** `--policy`, with `--oracle-actions-per-turn` / `--oracle-explore` applied (oracle only; checkPolicyFlags). */
async function generatorPolicy(
  options: GenerateFlags,
  mode: PromptMode,
  kafka: SpaKafka | undefined,
): Promise<ResolvedPolicy> {
  const perTurn = options.oracleActionsPerTurn;
  const explore = options.oracleExplore;
  if (perTurn === undefined)
    return resolvePolicy(options.policy, {
      mode,
      seed: options.policySeed,
      kafka,
      maxStaleness: options.maxStaleness,
      exportEvery: options.exportEvery,
      ...(options.resumedAt ? { resumedAt: options.resumedAt } : {}),
      maxNewTokens: options.maxNewTokens,
      stopAtAnswer: options.stopAtAnswer,
      contextWindow: options.contextWindow,
      executionProvider: options.device,
    });
  const source = builtinPolicy('oracle', {
    mode,
    actionsPerTurn: perTurn,
    exploreRate: explore,
    seed: options.policySeed,
  });
  const exploring = explore ? `, random action with p ${explore}` : '';
  return { source, describe: `oracle (${perTurn} per turn${exploring})`, close: async () => {} };
}

/** With `--policy latest`: how many batches each policy version played. */
function versions(policy: ResolvedPolicy): { policyVersions?: Record<string, number> } {
  return policy.follower ? { policyVersions: Object.fromEntries(policy.follower.batchesByVersion) } : {};
}

/** Where a resumed trainer stands: its steps done and the policy version it has published. */
interface ResumedAt {
  readonly step: number;
  readonly version: number;
}

/** `--resumed-at <step>:<version>`: two integers, step at least 1 (a trainer at step 0 has not resumed). */
function resumedAtArgument(value: string): ResumedAt {
  const match = /^\s*(\d+)\s*:\s*(\d+)\s*$/.exec(value);
  const [step, version] = [Number(match?.[1]), Number(match?.[2])];
  if (
    !match ||
    !Number.isSafeInteger(step) ||
    !Number.isSafeInteger(version) ||
    step < 1 ||
    step > MAX_BATCHES
  )
    throw new InvalidArgumentError(
      `--resumed-at must be <step>:<version>, the PPO trainer's steps done (1..${MAX_BATCHES}) and its published policy version, got "${value}"`,
    );
  return { step, version };
}
