import { existsSync, readFileSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import { withConfigFile } from '../config/command-config.js';
import {
  LOOP_CONFIGS,
  SPA_FULL_SIZE,
  TINY_MODELS,
  alignedContextWindow,
  loopConfig,
  type LoopConfig,
} from '../../loop/configs.js';
import { addLoopFieldOptions, loopFieldValues } from '../run/loop-fields.js';
import type { DataStageSummary } from '../../loop/data-stage.js';
import type { LoopEvaluation } from '../../loop/evaluate.js';
import type { LoopSummary } from '../../loop/spa-loop.js';
import type { TelemetryOptions } from '../../streams/telemetry/telemetry.js';
import type { EvaluationResult } from '../../streams/eval/evaluate.js';
import { pairedDifference } from '../../streams/eval/pass-at-k.js';
import { checkTelemetry, oneOf, port, UsageError } from '../options.js';
import { checkOutputDirectory } from '../output-paths.js';
import { checkLoopLimits } from '../run/loop-limits.js';
import { checkModel } from '../run/model-folder.js';
import { resumeCommand } from '../../loop/typed-command.js';
import { RunLockedError } from '../../loop/run-lock.js';
import { ConfigChangedError } from '../../loop/recorded-config.js';
import { allowedChanges, configChangedMessage } from '../run/config-change.js';
import { LAST_RUN, runIdArgument } from '../run-topics.js';
import { COMMAND_SUMMARIES } from './summaries.js';

/** `spa run`'s own options; every `LoopConfig` field is an option too (cli/run/loop-fields.ts). */
interface RunOptions {
  config: string;
  full?: boolean;
  runsDir: string;
  runId?: string;
  metricsPort?: number;
  otlpEndpoint?: string;
  allowConfigChange?: ReadonlySet<keyof LoopConfig>;
}

/** The broker settings, read from the environment by every command (infra/kafka/local-instance.ts). */
const BROKER_SETTINGS_HELP = `
Broker (environment variables, the same for every command, npm start and npm run kafka:*):
  KAFKA_BROKERS=host:port,…  use that cluster; no local broker is started
  KAFKA_PORT=9092            the local broker's port (its controller takes the next one)
  KAFKA_INSTANCE=default     the local broker's name; its data is in infra/kafka/data/<name>
  e.g. KAFKA_PORT=19192 KAFKA_INSTANCE=mine npm start  (SASL/TLS: infra/kafka/client/README.md)`;

/** What `spa run` does with the resolved config: run the loop and print its summary. */
export type RunLoop = (config: LoopConfig, options: RunOptions) => Promise<void>;

/**
 * `spa run`: the whole SPA loop at a small default size (the README's main job). Each knob comes
 * from, lowest first: the built-in config (`--config`), `--full`, `--config-file`, the command line.
 */
export function registerRunCommand(program: Command, runLoop: RunLoop = runAndPrint): void {
  const command = program
    .command('run')
    .description(COMMAND_SUMMARIES.run)
    .option(
      '--config <name>',
      `SPA config: ${Object.keys(LOOP_CONFIGS).join(' | ')}`,
      oneOf('--config', Object.keys(LOOP_CONFIGS)),
      '_2_sokoban',
    )
    .option(
      '--full',
      "SPA's sizes (1280 SFT trajectories, 1000 PPO steps of 32×8, 128 val puzzles): the real experiment",
    )
    .addHelpText('after', BROKER_SETTINGS_HELP);
  addLoopFieldOptions(command)
    .option('--runs-dir <dir>', 'where run folders go', 'runs')
    .option(
      '--run-id <id>',
      'run id (default: run-<timestamp>); a finished run id reprints its summary',
      newRunId,
    )
    .option(
      '--allow-config-change <fields>',
      'let a resume change these fields of the config its run was started with (comma-separated, as the refusal names them, e.g. ppo-steps,eval-puzzles)',
      allowedChanges(Object.keys(loopConfig('_2_sokoban')) as (keyof LoopConfig)[]),
    )
    .option(
      '--metrics-port <port>',
      'serve spa_* metrics at http://127.0.0.1:<port>/metrics',
      port('--metrics-port'),
    )
    .option(
      '--otlp-endpoint <url>',
      'send traces and metrics over OTLP/HTTP (the trainers too), e.g. http://127.0.0.1:4318',
    )
    .action((options: RunOptions & Record<string, unknown>) => {
      // Usage errors first, before a broker, a model or an episode is touched.
      const config = resolveRunConfig(options);
      checkOutputDirectory('--runs-dir', options.runsDir);
      checkTelemetry(runTelemetry(options));
      return runLoop(config, options);
    });
  withConfigFile(command);
}

/** `--run-id`'s parser: a topic-name part (spa.<id>.*) other than `last`, which `--run` of tap/replay/topics reads as the newest run. */
function newRunId(text: string): string {
  if (text === LAST_RUN)
    throw new InvalidArgumentError(
      `"${LAST_RUN}" means the newest run to spa tap/replay/topics --run; choose another id`,
    );
  return runIdArgument(text);
}

/** Built-in config < `--full` < config file and flags (already merged by commander). */
function resolveRunConfig(options: RunOptions & Record<string, unknown>): LoopConfig {
  const given = loopFieldValues(options);
  const merged: LoopConfig = {
    ...loopConfig(options.config),
    ...(options.full ? SPA_FULL_SIZE : {}),
    ...given,
  };
  // A model folder is read by trainer processes with another working directory: make it absolute.
  const tiny = TINY_MODELS.includes(merged.model);
  const config = tiny ? merged : { ...merged, model: resolve(merged.model) };
  if (config.generator === 'oracle' && config.sftGroupSize > 1)
    throw new UsageError(
      `--generator oracle with --sft-group-size ${config.sftGroupSize}: the oracle is deterministic, so every member of a group would be the same trajectory (docs/spa-data.md#groups); use --sft-group-size 1`,
    );
  if (config.warmupExplore > 0 && config.warmupActionsPerTurn !== 1)
    throw new UsageError(
      `--warmup-explore ${config.warmupExplore} with --warmup-actions-per-turn ${config.warmupActionsPerTurn}: a random action replaces the plan one action a turn; use --warmup-actions-per-turn 1`,
    );
  checkLoopLimits(config);
  // A tiny model's policy follows its SFT window unless told otherwise (docs/spa-generation.md#window).
  if (tiny)
    return given.contextWindow === undefined &&
      (given.sftMaxLength !== undefined || given.maxNewTokens !== undefined)
      ? { ...config, contextWindow: alignedContextWindow(config.sftMaxLength, config.maxNewTokens) }
      : config;
  // A real instruction-tuned model writes the format already and reads whole prompts: the warm-up, the
  // SFT-window context and the decision weight are for the tiny models only, unless asked for
  // (docs/spa-generation.md#window, docs/spa-sft.md#weights).
  return {
    ...config,
    ...(given.warmupTrajectories === undefined ? { warmupTrajectories: 0 } : {}),
    ...(given.contextWindow === undefined ? { contextWindow: 0 } : {}),
    ...(given.decisionWeight === undefined ? { decisionWeight: 1 } : {}),
    ...(given.sftDecisionWeight === undefined ? { sftDecisionWeight: 1 } : {}),
  };
}

async function runAndPrint(config: LoopConfig, options: RunOptions): Promise<void> {
  // The trainer processes inherit the environment: their step spans go to the same receiver.
  if (options.otlpEndpoint) process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = options.otlpEndpoint;
  const runId = options.runId ?? `run-${new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14)}`;
  const finished = finishedRun(options.runsDir, runId);
  if (finished) {
    process.stderr.write(
      `[spa run] run ${runId} finished earlier; its summary follows (a new run needs another --run-id, or none)\n`,
    );
    printSummary(finished);
    console.log(finished.runDir);
    return;
  }
  // A model folder is read first by a trainer, minutes in: check it before the broker and the run folder.
  checkModel(config.model);
  stopOnSignals(runId);
  // The loop and telemetry load here, not with the command: a usage error or `--help` needs neither.
  const [{ runSpaLoop }, { withTelemetry }] = await Promise.all([
    import('../../loop/spa-loop.js'),
    import('../../streams/telemetry/telemetry.js'),
  ]);
  const summary = await withTelemetry(runTelemetry(options), () =>
    runSpaLoop(config, {
      runsDir: options.runsDir,
      runId,
      ...(options.allowConfigChange ? { allowConfigChange: options.allowConfigChange } : {}),
    }),
  ).catch((error: unknown) => {
    // one process per run, one config per run: refusals before any work (exit 2)
    if (error instanceof RunLockedError) throw new UsageError(error.message);
    if (error instanceof ConfigChangedError) throw new UsageError(configChangedMessage(error, runId));
    throw error;
  });
  printSummary(summary);
  console.log(summary.runDir);
}

/**
 * Ctrl-C, SIGTERM (systemd, Kubernetes, CI runners, `timeout`) and SIGHUP (the terminal closed)
 * stop the run alike: every finished stage is on disk, so the same command with this run id
 * resumes. The exit handlers stop the children (loop/lifeline.ts), save the seconds so far and
 * release the run's lock; the exit code is 128 + the signal's number (130, 143, 129).
 */
function stopOnSignals(runId: string): void {
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.once(signal, () => {
      const how = signal === 'SIGINT' ? 'interrupted' : `interrupted by ${signal}`;
      try {
        process.stderr.write(
          `\n[spa run] ${how}; resume with: ${resumeCommand(process.argv.slice(2), runId)}\n`,
        );
      } finally {
        process.exit(128 + osConstants.signals[signal]);
      }
    });
}

/** Telemetry of the loop's own process (the trainers read the same variables). */
function runTelemetry(options: RunOptions): TelemetryOptions {
  return {
    serviceName: 'spa-generator',
    metricsPort: options.metricsPort,
    otlpEndpoint: options.otlpEndpoint,
  };
}

/** The summary of run `runId` under `runsDir` when it finished: summary.json is its last write. */
function finishedRun(runsDir: string, runId: string): LoopSummary | undefined {
  const file = join(resolve(runsDir), runId, 'summary.json');
  if (!existsSync(file)) return undefined;
  const summary = JSON.parse(readFileSync(file, 'utf8')) as Omit<LoopSummary, 'attempts'> & {
    attempts?: number;
  };
  // a summary from before runs counted their attempts: one attempt
  return { ...summary, attempts: summary.attempts ?? 1 };
}

function printSummary(summary: LoopSummary): void {
  console.log(summaryLines(summary).join('\n'));
  // what the end of the run wrote for the eye (loop/run-report.ts), when it did
  const png = join(summary.runDir, 'summary.png');
  if (existsSync(png)) console.log(`  picture      ${png}`);
  const runsDir = dirname(summary.runDir);
  const where = runsDir === resolve('runs') ? '' : ` --runs-dir ${runsDir}`;
  if (existsSync(join(summary.runDir, 'tensorboard')))
    console.log(`  curves       npx spa board${where} --run ${summary.runId}`);
}

/** The summary table `spa run` prints at the end (and again for a finished run id). */
export function summaryLines(summary: LoopSummary): string[] {
  const pct = (x: number) => (100 * x).toFixed(1).padStart(6);
  const se = (x: number) => (100 * x).toFixed(1).padEnd(4);
  const passes = summary.config.evalPasses > 1 ? ` × ${summary.config.evalPasses} passes` : '';
  const lines = [
    `SPA loop ${summary.config.name} (${summary.config.env}, model ${summary.config.model})`,
    ...summary.dataStages.map(dataStageLine),
    ...(summary.warmup ? [`  warm-up SFT  ${warmupLine(summary.warmup)}`] : []),
    `  SFT          ${sftLine(summary.sft)}`,
    `  self-play    ${summary.selfPlay.trajectories} episodes → ${summary.selfPlay.rollouts} rollouts`,
    `  generator    policy versions used (version: batches): ${Object.entries(summary.generatorVersions)
      .map(([v, n]) => `v${v}: ${n}`)
      .join(', ')}`,
    '',
    `  policy                   Pass@1        Pass@${summary.config.evalK}         (${summary.config.evalPuzzles} val puzzles × ${summary.config.evalK}${passes}; ± standard error)`,
    ...summary.evaluations.map(
      (e) =>
        `  ${evaluationLabel(e).padEnd(23)} ${pct(e.pass1)} ± ${se(e.pass1StdErr)}  ${pct(e.passK)} ± ${se(e.passKStdErr)}`,
    ),
    floorLine(summary.evaluations),
    ...stageGainLines(summary.evaluations),
    `  reproduce    ${summary.evaluations.at(-1)?.command ?? ''}`,
    '',
    `  seconds      ${secondsLine(summary)}`,
    `  summary      ${summary.runDir}/summary.json`,
  ];
  return lines.filter((line) => line !== undefined);
}

/** Each stage's seconds and the total, over every attempt of the run. */
function secondsLine({ seconds, attempts }: LoopSummary): string {
  const stages = Object.entries(seconds).map(([stage, s]) => `${stage} ${s.toFixed(0)}`);
  const total = Object.values(seconds).reduce((sum, s) => sum + s, 0);
  const over = attempts > 1 ? ` over ${attempts} attempts` : '';
  return `${stages.join(', ')}; ${total.toFixed(0)} in all${over}`;
}

/** The table's name for an evaluation: the floor, then each policy by version and stage. */
function evaluationLabel(e: LoopEvaluation): string {
  return e.stage === 'random floor' ? e.stage : `v${e.policyVersion} ${e.stage.replace(/ v0$/, '')}`;
}

/** `+x ± se` in points of Pass@1, paired by puzzle (docs/spa-eval.md#paired). */
function signedPoints(before: EvaluationResult, after: EvaluationResult): { text: string; z: number } {
  const { mean, stdErr } = pairedDifference(before, after);
  const text = `${mean >= 0 ? '+' : '−'}${(100 * Math.abs(mean)).toFixed(1)} ± ${(100 * stdErr).toFixed(1)}`;
  return { text, z: stdErr > 0 ? mean / stdErr : mean > 0 ? Infinity : mean < 0 ? -Infinity : 0 };
}

/**
 * Whether the final policy's Pass@1 beat the random floor (the first evaluation) by more than two
 * standard errors, paired by puzzle (docs/spa-eval.md#paired).
 */
export function floorLine(evaluations: readonly EvaluationResult[]): string | undefined {
  const [floor, final] = [evaluations[0], evaluations.at(-1)];
  if (!floor || !final || floor === final) return undefined;
  const { text, z } = signedPoints(floor, final);
  const verdict = z > 2 ? 'beats' : z < -2 ? 'is below' : 'is within two standard errors of';
  return `  final policy v${final.policyVersion} ${verdict} the random floor (Pass@1 ${text}, paired by puzzle)`;
}

/**
 * What each stage added: every evaluated policy against the one before it (the self-play v0 → the
 * policy PPO starts from: world-model SFT; that → the final policy: PPO), paired by puzzle.
 */
export function stageGainLines(evaluations: readonly LoopEvaluation[]): string[] {
  const policies = evaluations.filter((e) => e.stage !== 'random floor');
  return policies.slice(1).map((after, i) => {
    const before = policies[i]!;
    const { text } = signedPoints(before, after);
    const what = after.stage === 'before PPO' ? 'world-model SFT' : 'PPO';
    return `  ${what.padEnd(12)} v${before.policyVersion} → v${after.policyVersion}: Pass@1 ${text} (paired by puzzle)`;
  });
}

/** The warm-up's held-out metrics: does its first action depend on the board, does it copy the board. */
function warmupLine(metrics: Readonly<Record<string, unknown>>): string {
  const num = (key: string, digits: number) =>
    typeof metrics[key] === 'number' ? (metrics[key] as number).toFixed(digits) : '-';
  const rows = (key: string) => String(metrics[key] ?? '-');
  return (
    `${rows('step')} steps; first action: ${num('action_board_mi', 2)} nats about the board, ` +
    `p(demonstrated) ${num('action_demonstrated_prob', 2)} (${rows('action_probe_rows')} rows); observation copied ` +
    `${num('observation_copy_exact_match', 2)} (${rows('observation_copy_rows')} rows; first turns ` +
    `${num('observation_copy_first_turn_exact_match', 2)}, later ${num('observation_copy_later_turn_exact_match', 2)})`
  );
}

function dataStageLine(stage: DataStageSummary): string {
  const policy =
    stage.policy.version === null ? stage.policy.name : `${stage.policy.name} v${stage.policy.version}`;
  const rejects = Object.entries(stage.rejectsByReason);
  const rejected =
    rejects.length === 0 ? 'none rejected' : `rejected ${rejects.map(([r, n]) => `${r} ${n}`).join(', ')}`;
  return `  ${stage.stage.padEnd(12)} ${policy}: ${stage.trajectories} trajectories → ${stage.rowsAccepted} rows, ${rejected}`;
}

function sftLine(metrics: Readonly<Record<string, unknown>>): string {
  const num = (key: string, digits: number) =>
    typeof metrics[key] === 'number' ? (metrics[key] as number).toFixed(digits) : '-';
  const [match, rows] = [metrics['next_state_exact_match'], metrics['exact_match_rows']];
  // binomial standard error of the exact-match rate over the scored rows
  const error =
    typeof match === 'number' && typeof rows === 'number' && rows > 0
      ? ` ± ${Math.sqrt((match * (1 - match)) / rows).toFixed(3)}`
      : '';
  return (
    `${String(metrics['step'] ?? '-')} steps, val loss ${num('val_loss', 3)}, observation ppl ${num('observation_ppl', 1)}, ` +
    `next-state exact match ${num('next_state_exact_match', 3)}${error} on ${String(rows ?? '-')} held-out rows, ` +
    `observation copied ${num('observation_copy_exact_match', 2)}`
  );
}
