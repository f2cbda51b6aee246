import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { envFactory } from '../envs/registry.js';
import type { MalformedFilter } from '../operators/filter-malformed.js';
import type { OutboundTopic } from '../schemas/outbound.js';
import { episodeConfig } from '../streams/episodes/episode-config.js';
import { evaluatePolicy, type EvaluationResult } from '../streams/eval/evaluate.js';
import { generateToKafka } from '../streams/generator-sinks.js';
import { connectSpaKafka, type SpaKafka } from '../streams/kafka/spa-kafka.js';
import { builtinPolicy } from '../policies/builtin.js';
import { onnxPolicy, readManifest, verifiedModel } from '../policies/onnx/index.js';
import type { PolicySource } from '../policies/policy.js';
import { resolvePolicy } from '../streams/policies/resolve.js';
import { Progress, trajectoryProgress } from './progress.js';
import { warmupModeParts, type LoopConfig } from './configs.js';
import { generateFlags, generateInShards } from './generator-shards.js';
import { generateSftData, offsetsUnder, type DataStagePlayers, type DataStageSummary } from './sft-data.js';
import { readPpoProgress, readSftMetrics, readTrainerJson, type SftMetricsFile } from './trainer-files.js';
import { runTrainerModule, trainerPython } from './trainer-process.js';
import { typedCommand } from './typed-command.js';
import { AttemptClock } from './stage-seconds.js';
import { busyMachineCheck } from './busy-machine.js';

export interface LoopSummary {
  readonly runId: string;
  readonly runDir: string;
  readonly config: LoopConfig;
  readonly topics: Readonly<Record<string, string>>;
  /** Each data stage (warm-up demonstrations, self-play SFT data): its policy, rows and rejects. */
  readonly dataStages: readonly DataStageSummary[];
  /** The warm-up SFT's held-out metrics (board dependence, copy accuracy, …); null without a warm-up. */
  readonly warmup: Readonly<Record<string, unknown>> | null;
  readonly sft: Readonly<Record<string, unknown>>;
  readonly selfPlay: Readonly<Record<string, number>>;
  /**
   * Policy version → self-play batches the generator started with it; with `generators` n > 1,
   * summed over the n processes (each starts every batch, with its share of the groups).
   */
  readonly generatorVersions: Readonly<Record<string, number>>;
  readonly evaluations: readonly LoopEvaluation[];
  /** Seconds by stage, summed over every attempt of the run (a resumed run's earlier ones too). */
  readonly seconds: Readonly<Record<string, number>>;
  /** The run's attempts: 1, or more after an interruption and resumes. */
  readonly attempts: number;
}

const log = (line: string) => process.stderr.write(`[spa run] ${line}\n`);

/**
 * Stages whose results a resumed run (`spa run --run-id <id>` again) takes from disk instead of
 * redoing them: data stages (their topics hold the data once), trainer stages (their run folders
 * hold the checkpoints) and exports. PPO resumes inside its stage; evaluation is redone.
 */
const RESUMABLE_STAGES: ReadonlySet<string> = new Set([
  'warm-up data',
  'warm-up sft',
  'export v0',
  'export v1',
  'self-play sft data',
  'sft data',
  'sft',
]);

/** `redo`: an earlier attempt of this run started the stage and did not finish it. */
type Timed = <T>(stage: string, work: (attempt: { redo: boolean }) => Promise<T>) => Promise<T>;

/**
 * Runs each stage with a log line, its seconds on `clock` and a look at the machine's load first.
 * A resumable stage that finished in an earlier, interrupted attempt of this run is not redone: its
 * outputs are committed (topics, checkpoints, artifacts) and its result is on disk (the run
 * folder's stages/<stage>.json).
 */
function stageTimer(runDir: string, clock: AttemptClock, checkLoad: () => void): Timed {
  return async (stage, work) => {
    checkLoad();
    const resumable = RESUMABLE_STAGES.has(stage);
    const marker = join(runDir, 'stages', `${stage.replace(/[^\w.-]+/g, '-')}.json`);
    if (resumable && existsSync(marker)) {
      log(`── ${stage}: done in an earlier attempt, kept`);
      return (JSON.parse(readFileSync(marker, 'utf8')) as { result: never }).result;
    }
    const startedMarker = marker.replace(/\.json$/, '.started');
    const redo = resumable && existsSync(startedMarker);
    if (resumable) {
      mkdirSync(dirname(marker), { recursive: true });
      writeFileSync(startedMarker, `${new Date().toISOString()}\n`);
    }
    clock.start(stage);
    log(`── ${stage}${redo ? ' (again: an earlier attempt was cut off)' : ''}`);
    try {
      const result = await work({ redo });
      if (resumable) writeFileSync(marker, JSON.stringify({ result }, null, 2) + '\n');
      return result;
    } finally {
      clock.stop(stage);
    }
  };
}

/** Where the run's stages meet: its Kafka topics, trainer Python, run folder and stage timer. */
interface LoopContext {
  readonly config: LoopConfig;
  readonly kafka: SpaKafka;
  readonly python: string;
  readonly runDir: string;
  readonly runId: string;
  readonly brokers: string;
  readonly timed: Timed;
}

/**
 * The whole SPA loop (docs/spa-loop.md), each stage a stream over the run's own Kafka topics:
 *   1. SFT data. `self-play` (SPA): the model being trained is exported as policy v0 and plays
 *      the world-model prompts itself (the tiny model first gets a short format warm-up on
 *      oracle demonstrations); `oracle`/`random`: a built-in policy plays. Either way:
 *      annotate with ground-truth states → filter → spa.<run>.sft
 *   2. world-model SFT of the same model (Python trainer) → ONNX export → PolicyUpdate v1
 *   3. self-play with `--policy latest` → spa.<run>.rollouts, while the PPO trainer consumes them
 *      and publishes v2, v3, …, which the generator swaps to between batches
 *   4. Pass@1 / Pass@k of the final policy on the paper's validation puzzles
 */
export async function runSpaLoop(
  config: LoopConfig,
  options: { runsDir: string; runId: string },
): Promise<LoopSummary> {
  const runDir = resolve(options.runsDir, options.runId);
  // No stage of this run has started in this folder: a new run, whose topics must be empty. The
  // folder is made by the first stage that writes, so a start that fails (no broker) leaves none.
  const fresh = !existsSync(join(runDir, 'stages'));
  const clock = new AttemptClock(runDir);
  const checkLoad = busyMachineCheck(log);
  checkLoad();
  const timed = stageTimer(runDir, clock, checkLoad);
  // Ctrl-C exits at once (cli/commands/run.ts): the seconds so far go to the next attempt.
  const saveSeconds = () => clock.save();
  process.on('exit', saveSeconds);
  try {
    return await runStages(config, options, { runDir, fresh, clock, timed });
  } finally {
    process.off('exit', saveSeconds);
  }
}

/** {@link runSpaLoop}'s stages, from the broker connection to the summary. */
async function runStages(
  config: LoopConfig,
  options: { runsDir: string; runId: string },
  run: { runDir: string; fresh: boolean; clock: AttemptClock; timed: Timed },
): Promise<LoopSummary> {
  const { runDir, fresh, clock, timed } = run;
  const python = trainerPython();
  const kafka = await timed('kafka', () =>
    connectSpaKafka({ clientId: 'spa-run', topics: { prefix: `spa.${options.runId}.` } }),
  );
  try {
    if (fresh) await refuseUsedTopics(kafka, options.runId, runDir);
    const brokers = kafka.config.brokers.join(',');
    const ctx: LoopContext = { config, kafka, python, runDir, runId: options.runId, brokers, timed };
    const { dataStages, warmup, ppoStartModel, sft } = config.skipWorldModelSft
      ? await withoutWorldModelSft(ctx)
      : await withWorldModelSft(ctx);
    const { selfPlay, generatorVersions, evalArtifacts } = await timed('self-play + ppo', () =>
      selfPlayAndPpo(config, kafka, python, runDir, brokers, options.runId, ppoStartModel),
    );
    const evaluations = await timed('evaluate', () =>
      evaluate(config, withSelfPlayPolicy(config, runDir, evalArtifacts)),
    );
    const summary: LoopSummary = {
      runId: options.runId,
      runDir,
      config,
      topics: kafka.topics,
      dataStages,
      warmup,
      sft,
      selfPlay,
      generatorVersions,
      evaluations,
      ...clock.total(),
    };
    writeFileSync(join(runDir, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
    return summary;
  } finally {
    await kafka.close();
  }
}

/** Stages 1–2: world-model SFT data and SFT; PPO starts from the SFT run (its export is v1). */
async function withWorldModelSft(ctx: LoopContext) {
  const { dataStages, warmup, sftStartModel } = await sftDataStages(ctx);
  const sft = await ctx.timed('sft', () => trainSft(ctx, sftStartModel));
  return { dataStages, warmup, sft, ppoStartModel: join(ctx.runDir, 'sft') };
}

/**
 * The paper's RL-only baseline (`skipWorldModelSft`): no world-model SFT; the model (after the
 * tiny model's format warm-up) is exported and published as v1 and PPO starts from it.
 */
async function withoutWorldModelSft(ctx: LoopContext) {
  const { data: dataStages, model, metrics: warmup } = await formatWarmup(ctx);
  await ctx.timed('export v1', () => exportPolicy(ctx, model, { stage: 'init', version: 1, publish: true }));
  return { dataStages, warmup, sft: { skipped: true }, ppoStartModel: model };
}

/**
 * Stage 1, the world-model SFT data, on the run's `sft` topic. Returns the data stages and the
 * model the SFT stage starts from (the warmed-up checkpoint when there was a warm-up).
 */
async function sftDataStages(
  ctx: LoopContext,
): Promise<{ dataStages: DataStageSummary[]; warmup: SftMetricsFile | null; sftStartModel: string }> {
  const { config, runId } = ctx;
  const episodes = episodeConfig({
    env: config.env,
    runId: `${runId}-sft`,
    mode: 'wm',
    groups: config.sftGroups,
    groupSize: config.sftGroupSize,
    batches: config.sftBatches,
  });
  // Either branch writes the run's sft topic: in this process under one transactional id, or
  // with --generators n as n `spa generate --shard i/n` processes, each under its own;
  // `label` names it in the progress line and summary.json.
  const sftData = (
    stage: string,
    label: string,
    players: DataStagePlayers,
    describePolicy: DataStageSummary['policy'],
  ) =>
    ctx.timed(stage, ({ redo }) =>
      generateSftData(ctx.kafka, {
        purgeFirst: redo,
        stage: label,
        episodes,
        players,
        describePolicy,
        malformedFilter: malformedFilterOf(config),
        annotation: config.annotation,
      }),
    );
  const inProcess = (policy: PolicySource): DataStagePlayers => ({
    policy,
    transactionalId: `spa-run-${runId}-sft`,
  });
  const sharded = config.generators > 1;
  const generator = config.generator;
  if (generator !== 'self-play') {
    const players = sharded
      ? { shards: config.generators, policyFlags: ['--policy', generator, '--policy-seed', '0'] }
      : inProcess(builtinPolicy(generator, { mode: 'wm', seed: 0 }));
    const data = await sftData('sft data', `sft data (${generator})`, players, {
      name: generator,
      version: null,
    });
    return { dataStages: [data], warmup: null, sftStartModel: config.model };
  }
  const warmup = await formatWarmup(ctx);
  const v0 = await ctx.timed('export v0', () =>
    exportPolicy(ctx, warmup.model, { stage: 'init', version: 0, publish: false }),
  );
  let selfPlay: DataStageSummary;
  if (sharded) {
    const players = { shards: config.generators, policyFlags: onnxPolicyFlags(config, `onnx:${v0}`, 0) };
    // The policy is v0's export (its manifest's version 0), as the in-process branch records it.
    const describe = { name: `onnx:${basename(v0)}`, version: 0 };
    selfPlay = await sftData('self-play sft data', 'self-play sft data', players, describe);
  } else {
    const policy = await onnxPolicy({
      folder: v0,
      seed: 0,
      ...generationOptions(config),
    });
    try {
      selfPlay = await sftData('self-play sft data', 'self-play sft data', inProcess(policy), {
        name: policy.name,
        version: policy.version,
      });
    } finally {
      await policy.close?.();
    }
  }
  if (selfPlay.rowsAccepted === 0)
    throw new Error(
      `self-play with ${selfPlay.policy.name} v${selfPlay.policy.version} produced no accepted SFT rows ` +
        `(rejected: ${JSON.stringify(selfPlay.rejectsByReason)}): nothing to finetune on; a larger ` +
        `format warm-up (warmupTrajectories, warmupEpochs) or --generator oracle would give data`,
    );
  return { dataStages: [...warmup.data, selfPlay], warmup: warmup.metrics, sftStartModel: warmup.model };
}

/**
 * The tiny model's format warm-up: SFT on oracle demonstrations (their own topics
 * `spa.<run>.warmup.*`, puzzles disjoint from the self-play ones) in each of `warmupModes`, so
 * that v0 can write `<observation>…<prediction>…<answer>` turns for the world-model prompts and
 * `<think>…</think><answer>` turns for the PPO prompts at all (docs/spa-loop.md#warm-up).
 * Returns its data stages and the warmed-up run folder; without warm-up (`warmupTrajectories` 0),
 * none and the configured model.
 */
async function formatWarmup(
  ctx: LoopContext,
): Promise<{ data: DataStageSummary[]; model: string; metrics: SftMetricsFile | null }> {
  const { config, runId } = ctx;
  if (config.warmupTrajectories <= 0) return { data: [], model: config.model, metrics: null };
  const warm = await connectSpaKafka({
    clientId: 'spa-run-warmup',
    topics: { prefix: `spa.${runId}.warmup.` },
  });
  try {
    // Both modes share the warm-up topics: one stage, so a redo purges and regenerates both.
    const data = await ctx.timed('warm-up data', async ({ redo }) => {
      const stages: DataStageSummary[] = [];
      for (const [index, mode] of config.warmupModes.entries()) {
        const { prompt, response } = warmupModeParts(mode);
        stages.push(
          await generateSftData(warm, {
            purgeFirst: redo && index === 0,
            stage: `warm-up data (oracle, ${mode})`,
            episodes: episodeConfig({
              env: config.env,
              runId: `${runId}-warmup-${mode}`,
              mode: prompt,
              groups: config.warmupTrajectories,
              groupSize: 1,
              batches: 1,
              // each kind its own stretch of puzzles, disjoint from the others'
              seedBase: WARMUP_SEED_BASE + index * config.warmupTrajectories,
            }),
            players: {
              policy: builtinPolicy('oracle', {
                mode: response,
                seed: index,
                actionsPerTurn: config.warmupActionsPerTurn,
                exploreRate: config.warmupExplore,
              }),
              transactionalId: `spa-run-${runId}-warmup-${mode}`,
            },
            describePolicy: { name: 'oracle', version: null },
            malformedFilter: malformedFilterOf(config),
          }),
        );
      }
      return stages;
    });
    const out = join(ctx.runDir, 'warmup');
    await ctx.timed('warm-up sft', () =>
      runSft(
        ctx,
        'warm-up',
        {
          model: config.model,
          topic: warm.topics.sft,
          epochs: config.warmupEpochs,
          lr: config.warmupLr,
          out,
        },
        [
          // a few hundred held-out puzzles score the warm-up; the rest are trained on
          ['--val-fraction', String(warmupValFraction(config))],
          ['--eval-rows', String(SFT_EXACT_MATCH_ROWS)],
        ],
      ),
    );
    return { data, model: out, metrics: readSftMetrics(out) };
  } finally {
    await warm.close();
  }
}

/**
 * Warm-up puzzles come from their own seed range (50000 on; self-play and PPO play 10000 on), so
 * self-play never replays a demonstrated puzzle; each kind of demonstration gets its own stretch.
 */
const WARMUP_SEED_BASE = 50_000;

/** The warm-up's held-out share: about 128 puzzles (at most SFT's usual fifth), enough to score it. */
function warmupValFraction(config: LoopConfig): number {
  const puzzles = config.warmupTrajectories * config.warmupModes.length;
  return Math.min(0.2, 128 / puzzles);
}

/**
 * A new run whose id's topics already hold records (an earlier run with the same id, maybe in
 * another `--runs-dir`) would train on that run's rollouts and follow its policies: refuse.
 */
async function refuseUsedTopics(kafka: SpaKafka, runId: string, runDir: string): Promise<void> {
  const held = await offsetsUnder(kafka, `spa.${runId}.`);
  const topics = Object.entries(held).map(([topic, n]) => `${topic} (${n} offsets)`);
  if (topics.length > 0)
    throw new Error(
      `run id "${runId}" is new in ${runDir}, but its topics already hold records of an earlier run with ` +
        `that id: ${topics.join(', ')}. Choose another --run-id, or resume that run with the --runs-dir it used.`,
    );
}

/**
 * Exports `model` (a HF folder, `tiny` or a trainer run folder) as ONNX policy `version` under the
 * run's policies folder, announcing it on the run's policy topic when asked; returns its folder.
 */
async function exportPolicy(
  ctx: LoopContext,
  model: string,
  options: { stage: 'init'; version: number; publish: boolean },
): Promise<string> {
  const root = join(ctx.runDir, 'policies');
  const publish = options.publish ? ['--publish', ctx.kafka.topics.policy, '--brokers', ctx.brokers] : [];
  await runTrainerModule(
    ctx.python,
    'spa_trainer.export',
    [
      ['--model', model],
      ['--out', root],
      ['--stage', options.stage],
      ['--version', String(options.version)],
      ['--name', ctx.config.model],
      publish,
    ].flat(),
    { label: 'export', env: trainerDeviceEnv(ctx.config) },
  ).done;
  return join(root, `v${String(options.version).padStart(6, '0')}`);
}

/** `spa generate`'s flags for ONNX policy `spec` generating as {@link generationOptions} says. */
function onnxPolicyFlags(config: LoopConfig, spec: string, seed: number): string[] {
  return [
    ...['--policy', spec, '--policy-seed', String(seed), '--device', config.device],
    ...['--max-new-tokens', String(config.maxNewTokens)],
    ...(config.stopAtAnswer ? ['--stop-at-answer'] : []),
    ...(config.contextWindow > 0 ? ['--context-window', String(config.contextWindow)] : []),
  ];
}

/** How every ONNX policy of the loop generates: self-play v0, the PPO generator, evaluation. */
function generationOptions(config: LoopConfig) {
  return {
    maxNewTokens: config.maxNewTokens,
    stopAtAnswer: config.stopAtAnswer,
    // 0 = the whole prompt (LoopConfig.contextWindow)
    contextWindow: config.contextWindow > 0 ? config.contextWindow : undefined,
    executionProvider: config.device,
  };
}

/**
 * Held-out rows the SFT stage scores for next-state exact match: enough that the summary's
 * standard error (binomial, ≤ 0.05 at 96 rows) tells a learned world model from none.
 */
const SFT_EXACT_MATCH_ROWS = 96;

/** Stage 2: world-model SFT from `startModel` on the run's `sft` topic, exported and published as v1. */
async function trainSft(ctx: LoopContext, startModel: string) {
  const { config, kafka, runDir } = ctx;
  const out = join(runDir, 'sft');
  const run = { model: startModel, topic: kafka.topics.sft, epochs: config.sftEpochs, lr: config.sftLr, out };
  await runSft(ctx, 'sft', run, [
    ['--eval-rows', String(SFT_EXACT_MATCH_ROWS)],
    ['--export', join(runDir, 'policies')],
    ['--publish', kafka.topics.policy],
  ]);
  return readSftMetrics(out);
}

/**
 * The Python SFT trainer on a Kafka topic with the run's learning rate, batch size and window;
 * `extra` adds flags (evaluation rows, export, publishing).
 */
async function runSft(
  ctx: LoopContext,
  label: string,
  run: { model: string; topic: string; epochs: number; lr: number; out: string },
  extra: string[][] = [],
): Promise<void> {
  const { config } = ctx;
  const args = [
    ['--model', run.model],
    ['--input', `kafka:${run.topic}`],
    ['--epochs', String(run.epochs)],
    ['--lr', String(run.lr)],
    ['--batch-size', String(config.sftBatchSize)],
    ['--max-length', String(config.sftMaxLength)],
    ['--decision-weight', String(config.decisionWeight)],
    ['--out', run.out],
    ['--brokers', ctx.brokers],
    ...extra,
  ];
  await runTrainerModule(ctx.python, 'spa_trainer.sft', args.flat(), {
    label,
    env: trainerDeviceEnv(config),
    procs: config.trainerProcs,
  }).done;
}

async function selfPlayAndPpo(
  config: LoopConfig,
  kafka: SpaKafka,
  python: string,
  runDir: string,
  brokers: string,
  runId: string,
  startModel: string,
) {
  // A resumed run: the trainer continues from its checkpoint, so play only the remaining
  // steps' batches, on the puzzles those steps would have had, admitted as those steps' batches.
  const resumed = ppoProgress(join(runDir, 'ppo'));
  const done = resumed?.step ?? 0;
  if (done >= config.ppoSteps)
    throw new Error(
      `PPO finished all ${config.ppoSteps} steps in an earlier attempt of this run; its policies are in ` +
        `${join(runDir, 'policies')}: evaluate them with ${typedCommand(['eval', '--policy'])} onnx:<folder>, or start a new --run-id`,
    );
  const latest = await resolvePolicy('latest', {
    mode: 'base',
    kafka,
    maxStaleness: config.maxStaleness,
    exportEvery: config.exportEvery,
    seed: 1,
    ...(resumed && resumed.step > 0 ? { resumedAt: resumed } : {}),
    ...generationOptions(config),
  });
  const trainer = runTrainerModule(
    python,
    'spa_trainer.ppo_service',
    [
      ['--model', startModel],
      ['--input', `kafka:${kafka.topics.rollouts}`],
      ['--out', join(runDir, 'ppo')],
      ['--steps', String(config.ppoSteps)],
      ['--groups-per-step', String(config.ppoGroups)],
      ['--group-size', String(config.ppoGroupSize)],
      ['--keep-ratio', String(config.ppoKeepRatio)],
      ['--export-every', String(config.exportEvery)],
      ['--export-root', join(runDir, 'policies')],
      ['--publish', kafka.topics.policy],
      ['--max-staleness', String(config.maxStaleness)],
      ['--mask', config.ppoMask],
      ['--loss-agg', config.ppoLossAgg],
      ['--kl-loss-coef', String(config.ppoKlCoef)],
      ['--adv-estimator', config.ppoAdvEstimator === 'gae' ? 'gae' : 'grpo'],
      ...(config.ppoAdvEstimator === 'grpo-mean' ? [['--no-grpo-std-norm']] : []),
      ['--actor-lr', String(config.ppoActorLr)],
      ['--critic-lr', String(config.ppoCriticLr)],
      ['--micro-batch-size', String(config.ppoMicroBatch)],
      ['--ppo-epochs', String(config.ppoEpochs)],
      ['--mini-batch-size', String(config.ppoMiniBatch)],
      // The generator's window: PPO scores each turn on the prompt it was sampled from (docs/spa-ppo.md#window).
      ...(config.contextWindow > 0
        ? [
            ['--context-window', String(config.contextWindow)],
            ['--max-new-tokens', String(config.maxNewTokens)],
          ]
        : []),
      ['--dlq', `kafka:${kafka.topics.dlq}`], // the run's own topic: spa.dlq may not exist on this broker
      ['--brokers', brokers],
    ].flat(),
    { label: 'ppo', env: trainerDeviceEnv(config), procs: config.trainerProcs },
  );
  try {
    if (done > 0) log(`self-play + ppo: resuming after PPO step ${done} of ${config.ppoSteps}`);
    const episodes = episodeConfig({
      env: config.env,
      runId: `${runId}-rl${done > 0 ? `-from${done}` : ''}`,
      mode: 'base',
      groups: config.ppoGroups,
      groupSize: config.ppoGroupSize,
      batches: config.ppoSteps - done,
      seedBase: PPO_SEED_BASE + done * config.ppoGroups,
    });
    let selfPlay: Record<OutboundTopic, number>;
    let generatorVersions: Record<string, number>;
    if (config.generators > 1) {
      // n `spa generate --shard i/n`, each following the policy topic as `latest` does here;
      // this process's follower only supplies the final artifacts for evaluation.
      log(`self-play: ${config.generators} generator processes (spa generate --shard)`);
      const args = [
        ...generateFlags(episodes, 'rollouts', kafka.topics),
        ...onnxPolicyFlags(config, 'latest', 1),
        ...['--max-staleness', String(config.maxStaleness), '--export-every', String(config.exportEvery)],
      ];
      const report = await generateInShards(args, config.generators, brokers);
      selfPlay = report.counts;
      generatorVersions = report.policyVersions;
    } else {
      const progress = trajectoryProgress('self-play', episodes);
      selfPlay = await generateToKafka(kafka, `spa-run-${runId}-rl`, {
        episodes,
        makeEnv: envFactory({ name: config.env }),
        policy: latest.source,
        pipeline: { target: 'rollouts' },
        onRecord: (o) => progress.add(o.topic),
      });
      progress.done();
      generatorVersions = Object.fromEntries(latest.follower!.batchesByVersion);
    }
    await trainer.done;
    // The trainer's last export is the final policy; wait until the follower has loaded it.
    const finalVersion = readPpoProgress(join(runDir, 'ppo')).version;
    await latest.follower!.waitForVersion(finalVersion);
    const artifacts = latest.follower!.artifacts;
    // The final policy is evaluated by default; SFT's v1 too on request (each costs minutes on CPU).
    const versions = config.evalCurve
      ? curveVersions([...artifacts.keys()], finalVersion, config)
      : config.evalSftPolicy
        ? [Math.min(...artifacts.keys()), finalVersion]
        : [finalVersion];
    const evalArtifacts = new Map(versions.map((v) => [v, artifacts.get(v)!]));
    return { selfPlay, generatorVersions, evalArtifacts };
  } catch (error) {
    trainer.kill();
    throw error;
  } finally {
    await latest.close();
  }
}

/**
 * The versions a learning curve evaluates: the first (PPO step 0), the final one, and those whose
 * PPO step (versions are `exportEvery` steps apart) is a multiple of `evalEvery` (0: every version).
 */
export function curveVersions(
  versions: readonly number[],
  finalVersion: number,
  config: Pick<LoopConfig, 'exportEvery' | 'evalEvery'>,
): number[] {
  const first = Math.min(...versions);
  return [...versions]
    .sort((a, b) => a - b)
    .filter((v) => {
      const step = (v - first) * config.exportEvery;
      return v === finalVersion || config.evalEvery === 0 || step % config.evalEvery === 0;
    });
}

/** SPA's first training seed; PPO batch b plays seeds from here + b × groups. */
export const PPO_SEED_BASE = 10_000;

/** The PPO service's steps done and its published version (`<out>/progress.json`), if it has started. */
function ppoProgress(outDir: string): { step: number; version: number } | undefined {
  const path = join(outDir, 'progress.json');
  if (!existsSync(path)) return undefined;
  const { step, version } = readTrainerJson(path);
  return typeof step === 'number' && typeof version === 'number' ? { step, version } : undefined;
}

/** One evaluation of the run, with the `spa eval` command that reproduces it. */
export interface LoopEvaluation extends EvaluationResult {
  readonly command: string;
  /**
   * Where in the loop the policy stands: `random floor`, `self-play v0` (the model that played the
   * SFT data: the warmed-up tiny model), `before PPO`, `PPO step <n>` or `after PPO`.
   */
  readonly stage: string;
}

/**
 * With `evalSftPolicy` (and no learning curve), the self-play policy v0 (the warmed-up model for a tiny one) is evaluated
 * too, so the summary shows what each stage added: warm-up, world-model SFT, PPO.
 */
function withSelfPlayPolicy(
  config: LoopConfig,
  runDir: string,
  artifacts: ReadonlyMap<number, string>,
): ReadonlyMap<number, string> {
  const v0 = join(runDir, 'policies', 'v000000');
  // a learning curve (`evalCurve`) is PPO's own: from the policy it starts from
  if (!config.evalSftPolicy || config.evalCurve || config.generator !== 'self-play' || !existsSync(v0))
    return artifacts;
  return new Map([[0, v0], ...artifacts]);
}

/** The stage of each evaluated version: v0 self-play, the first PPO's start, the last its end. */
function stagesOf(versions: readonly number[], config: LoopConfig): Map<number, string> {
  const sorted = [...versions].sort((a, b) => a - b);
  const ppo = sorted.filter((v) => v > 0 || config.generator !== 'self-play');
  const [start, final] = [ppo[0], ppo.at(-1)];
  return new Map(
    sorted.map((v) => [
      v,
      v === final
        ? 'after PPO'
        : v === start
          ? 'before PPO'
          : ppo.includes(v)
            ? `PPO step ${(v - start!) * config.exportEvery}`
            : 'self-play v0',
    ]),
  );
}

/**
 * Pass@1 / Pass@k of the random policy (a floor) and the given ONNX policy versions. Each policy
 * is built as `spa eval` builds it (`resolvePolicy`), so the recorded command gives the same numbers.
 */
async function evaluate(
  config: LoopConfig,
  artifacts: ReadonlyMap<number, string>,
): Promise<LoopEvaluation[]> {
  const run = async (label: string, spec: string, seed: number, stage: string): Promise<LoopEvaluation> => {
    const onnx = spec.startsWith('onnx:');
    const args = [
      ...['--policy', spec, '--env', config.env, '--puzzles', String(config.evalPuzzles)],
      ...['--k', String(config.evalK), '--passes', String(config.evalPasses), '--seed', String(seed)],
      ...(onnx ? ['--max-new-tokens', String(config.maxNewTokens), '--device', config.device] : []),
      ...(onnx && config.stopAtAnswer ? ['--stop-at-answer'] : []),
      ...(onnx && config.contextWindow > 0 ? ['--context-window', String(config.contextWindow)] : []),
    ];
    const policy = await resolvePolicy(spec, {
      mode: 'base',
      seed,
      ...generationOptions(config),
    });
    try {
      const progress = new Progress(`eval ${label}`, {
        key: 'episodes',
        value: config.evalPuzzles * config.evalK * config.evalPasses,
      });
      const result = await evaluatePolicy(policy.source, {
        env: config.env,
        puzzles: config.evalPuzzles,
        passes: config.evalPasses,
        k: config.evalK,
        onEpisode: () => progress.add('episodes'),
      });
      progress.done();
      return { ...result, command: typedCommand(['eval', ...args]), stage };
    } finally {
      await policy.close();
    }
  };
  const floor = await run('random', 'random', 7, 'random floor');
  const stages = stagesOf([...artifacts.keys()], config);
  const stageOf = (version: number) => stages.get(version) ?? `v${version}`;
  const versions = await evaluateDistinct(artifacts, (version, folder) =>
    run(`v${version}`, `onnx:${folder}`, 11, stageOf(version)),
  );
  // a version that reused another's result (the same model bytes) keeps its own stage
  return [floor, ...versions.map((e) => ({ ...e, stage: stageOf(e.policyVersion) }))];
}

/**
 * Evaluates each version's artifact with `evaluateOne`, once per distinct model: a version whose
 * model file has the same sha256 as an evaluated one's (every version of a control arm, whose
 * learning rates are 0) gets that result under its own name, version and command, since an
 * evaluation is a function of the model bytes and the seed (the tokenizer and settings are the
 * run's). Each evaluation left out saves minutes of CPU here.
 */
export async function evaluateDistinct(
  artifacts: ReadonlyMap<number, string>,
  evaluateOne: (version: number, folder: string) => Promise<LoopEvaluation>,
): Promise<LoopEvaluation[]> {
  const byModel = new Map<string, { version: number; folder: string; result: LoopEvaluation }>();
  const results: LoopEvaluation[] = [];
  for (const [version, folder] of artifacts) {
    // A new model is checked against its manifest when evaluateOne loads it; a repeat is never
    // loaded, so its bytes are checked here before they are given another version's result.
    const { sha256 } = await readManifest(folder);
    const same = byModel.get(sha256);
    if (same) {
      await verifiedModel(folder);
      log(
        `eval v${version}: the same model as v${same.version} (sha256 ${sha256.slice(0, 12)}…), its result kept`,
      );
      results.push({
        ...same.result,
        policy: `onnx:${basename(folder)}`,
        policyVersion: version,
        command: same.result.command.replace(same.folder, folder),
      });
      continue;
    }
    const result = await evaluateOne(version, folder);
    byModel.set(sha256, { version, folder, result });
    results.push(result);
  }
  return results;
}

/** The trainer picks CUDA whenever it sees a GPU; `--device cpu` hides GPUs from it. */
function trainerDeviceEnv(config: LoopConfig): NodeJS.ProcessEnv {
  return config.device === 'cpu' ? { CUDA_VISIBLE_DEVICES: '' } : {};
}

/** The loop's malformed-filter fields as the generator pipeline takes them. */
function malformedFilterOf(config: LoopConfig): MalformedFilter {
  return { envs: config.filterEnvs, parserReasons: config.filterParserReasons };
}
