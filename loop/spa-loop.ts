/**
 * The whole SPA loop (docs/spa-loop.md), each stage a module of loop/ over the run's own Kafka
 * topics, each given the one LoopContext:
 *   1. SFT data (sft-data.ts; for self-play after warmup.ts and export-policy.ts's v0)
 *   2. world-model SFT → ONNX export → PolicyUpdate v1 (world-model-sft.ts)
 *   3. self-play with `--policy latest` while PPO trains and publishes v2, v3, … (self-play-ppo.ts)
 *   4. Pass@1 / Pass@k of the final policy on the validation puzzles (evaluate.ts)
 * and the run's summary.json. `cli/commands/run.ts` parses the flags and calls {@link runSpaLoop}.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { connectSpaKafka, type SpaKafka } from '../streams/kafka/spa-kafka.js';
import { busyMachineCheck } from './busy-machine.js';
import type { LoopConfig } from './configs.js';
import type { LoopContext } from './context.js';
import { offsetsUnder, type DataStageSummary } from './data-stage.js';
import { evaluation, type LoopEvaluation } from './evaluate.js';
import { exportPolicy } from './export-policy.js';
import { log } from './log.js';
import { checkRecordedConfig, recordConfig } from './recorded-config.js';
import { holdRunLock } from './run-lock.js';
import { selfPlayAndPpo } from './self-play-ppo.js';
import { sftData } from './sft-data.js';
import { writeRunReport } from './run-report.js';
import { AttemptClock } from './stage-seconds.js';
import { stageTimer } from './stage-timer.js';
import { trainerPython } from './trainer-process.js';
import { formatWarmup } from './warmup.js';
import { worldModelSft } from './world-model-sft.js';

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
   * Policy version → self-play batches whose committed rollouts carry it, over every attempt of the
   * run, read from the rollouts topic (a batch split across two versions counts under each).
   */
  readonly generatorVersions: Readonly<Record<string, number>>;
  readonly evaluations: readonly LoopEvaluation[];
  /** Seconds by stage, summed over every attempt of the run (a resumed run's earlier ones too). */
  readonly seconds: Readonly<Record<string, number>>;
  /** The run's attempts: 1, or more after an interruption and resumes. */
  readonly attempts: number;
}

/** Where a run goes, and what a resume may change of the config it was started with. */
export interface RunOptions {
  readonly runsDir: string;
  readonly runId: string;
  /** Fields a resume may give other values than the run's recorded config (loop/recorded-config.ts). */
  readonly allowConfigChange?: ReadonlySet<keyof LoopConfig>;
}

/**
 * Runs the loop of `config` as run `runId` in `<runsDir>/<runId>` (a new run, or resumes it),
 * holding the run's lock throughout (loop/run-lock.ts).
 */
export async function runSpaLoop(config: LoopConfig, options: RunOptions): Promise<LoopSummary> {
  const runDir = resolve(options.runsDir, options.runId);
  const release = holdRunLock(runDir, options.runId);
  try {
    checkRecordedConfig(runDir, config, options.allowConfigChange ?? new Set());
    return await runLocked(config, options.runId, runDir);
  } finally {
    release();
  }
}

/** {@link runSpaLoop} once the run is this process's. */
async function runLocked(config: LoopConfig, runId: string, runDir: string): Promise<LoopSummary> {
  // No stage of this run has started in this folder: a new run, whose topics must be empty. A
  // start that fails (no broker) leaves no folder: the lock's release removes it while empty.
  const fresh = !existsSync(join(runDir, 'stages'));
  const clock = new AttemptClock(runDir);
  const checkLoad = busyMachineCheck(log);
  let othersCores = checkLoad();
  const timed = stageTimer(runDir, clock, () => {
    othersCores = checkLoad();
  });
  // Ctrl-C exits at once (cli/commands/run.ts): the seconds so far go to the next attempt.
  const saveSeconds = () => clock.save();
  process.on('exit', saveSeconds);
  try {
    const python = trainerPython();
    const prefix = `spa.${runId}.`;
    const kafka = await timed('kafka', () => connectSpaKafka({ clientId: 'spa-run', topics: { prefix } }));
    try {
      if (fresh) await refuseUsedTopics(kafka, runId, runDir);
      recordConfig(runDir, config);
      const brokers = kafka.config.brokers.join(',');
      const ctx: LoopContext = {
        config,
        kafka,
        python,
        runDir,
        runId,
        brokers,
        timed,
        othersCores: () => othersCores,
      };
      const summary = { ...(await runStages(ctx)), ...clock.total() };
      const source = join(runDir, 'summary.json');
      writeFileSync(source, JSON.stringify(summary, null, 2) + '\n');
      // the evaluations beside the training curves, and the run's picture (summary.png)
      await writeRunReport(python, {
        source,
        loggingDir: join(runDir, 'tensorboard', 'eval'),
        reportTo: config.reportTo,
      });
      return summary;
    } finally {
      await kafka.close();
    }
  } finally {
    process.off('exit', saveSeconds);
  }
}

/** The loop's stages in order; the summary without its seconds. */
async function runStages(ctx: LoopContext): Promise<Omit<LoopSummary, 'seconds' | 'attempts'>> {
  const { dataStages, warmup, sft, ppoStartModel } = ctx.config.skipWorldModelSft
    ? await withoutWorldModelSft(ctx)
    : await withWorldModelSft(ctx);
  const selfPlay = await selfPlayAndPpo(ctx, ppoStartModel);
  const evaluations = await evaluation(ctx, selfPlay);
  const { config, runId, runDir, kafka } = ctx;
  return {
    ...{ runId, runDir, config, topics: kafka.topics, dataStages, warmup, sft },
    ...{ selfPlay: selfPlay.selfPlay, generatorVersions: selfPlay.generatorVersions, evaluations },
  };
}

/** What stages 1–2 leave for PPO: their summaries and the model PPO starts from. */
interface BeforePpo {
  readonly dataStages: DataStageSummary[];
  readonly warmup: Readonly<Record<string, unknown>> | null;
  readonly sft: Readonly<Record<string, unknown>>;
  readonly ppoStartModel: string;
}

/** Stages 1–2: world-model SFT data and SFT; PPO starts from the SFT run (its export is v1). */
async function withWorldModelSft(ctx: LoopContext): Promise<BeforePpo> {
  const { dataStages, warmup, sftStartModel } = await sftData(ctx);
  const sft = await worldModelSft(ctx, sftStartModel);
  return { dataStages, warmup, sft, ppoStartModel: join(ctx.runDir, 'sft') };
}

/**
 * The paper's RL-only baseline (`skipWorldModelSft`): no world-model SFT; the model (after the
 * tiny model's format warm-up) is exported and published as v1 and PPO starts from it.
 */
async function withoutWorldModelSft(ctx: LoopContext): Promise<BeforePpo> {
  const { data: dataStages, model, metrics: warmup } = await formatWarmup(ctx);
  await exportPolicy(ctx, model, 1, true);
  return { dataStages, warmup, sft: { skipped: true }, ppoStartModel: model };
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
