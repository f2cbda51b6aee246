import type { Command } from 'commander';
import { LOOP_CONFIGS, SPA_FULL_SIZE, TINY_MODELS, loopConfig, type LoopConfig } from '../run/configs.js';
import type { DataStageSummary } from '../run/sft-data.js';
import { runSpaLoop, type LoopSummary } from '../run/spa-loop.js';
import { withTelemetry } from '../../streams/telemetry/telemetry.js';
import { nonNegativeInt, oneOf, positiveInt } from '../options.js';

interface RunOptions {
  config: string;
  model?: string;
  generator?: LoopConfig['generator'];
  ppoSteps?: number;
  evalPuzzles?: number;
  runsDir: string;
  runId?: string;
  metricsPort?: number;
  otlpEndpoint?: string;
  full?: boolean;
  evalSft?: boolean;
  device: 'cpu' | 'cuda';
}

/** `spa run`: the whole SPA loop at a small default size (the README's main job). */
export function registerRunCommand(program: Command): void {
  program
    .command('run')
    .description(
      'run the SPA loop end to end: generate → SFT → export → self-play + PPO with live policy swaps → Pass@k',
    )
    .option('--config <name>', `SPA config: ${Object.keys(LOOP_CONFIGS).join(' | ')}`, '_2_sokoban')
    .option('--model <tiny|folder>', 'tiny (built here) or a local Hugging Face causal-LM folder')
    .option(
      '--generator <policy>',
      'SFT data generator: self-play (SPA: the model being trained; the default) | oracle | random',
      oneOf('--generator', ['self-play', 'oracle', 'random'] as const),
    )
    .option('--ppo-steps <n>', 'PPO steps', positiveInt('--ppo-steps'))
    .option('--eval-puzzles <n>', 'validation puzzles (SPA: 128)', positiveInt('--eval-puzzles'))
    .option(
      '--full',
      "SPA's sizes (1280 SFT trajectories, 1000 PPO steps of 32×8, 128 val puzzles): the real experiment",
    )
    .option('--eval-sft', 'also evaluate the SFT policy (v1), not only the final one')
    .option(
      '--device <device>',
      'cpu | cuda (ONNX generation and the trainer)',
      oneOf('--device', ['cpu', 'cuda'] as const),
      'cpu',
    )
    .option('--runs-dir <dir>', 'where run folders go', 'runs')
    .option('--run-id <id>', 'run id (default: run-<timestamp>)')
    .option(
      '--metrics-port <port>',
      'serve spa_* metrics at http://127.0.0.1:<port>/metrics',
      nonNegativeInt('--metrics-port'),
    )
    .option(
      '--otlp-endpoint <url>',
      'send traces and metrics over OTLP/HTTP (the trainers too), e.g. http://127.0.0.1:4318',
    )
    .action(async (options: RunOptions) => {
      // The trainer processes inherit the environment: their step spans go to the same receiver.
      if (options.otlpEndpoint) process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = options.otlpEndpoint;
      const base = loopConfig(options.config);
      let config: LoopConfig = {
        ...base,
        ...(options.full ? SPA_FULL_SIZE : {}),
        ...(options.evalSft ? { evalSftPolicy: true } : {}),
        device: options.device,
        ...(options.model ? { model: options.model } : {}),
        ...(options.generator ? { generator: options.generator } : {}),
        ...(options.ppoSteps ? { ppoSteps: options.ppoSteps } : {}),
        ...(options.evalPuzzles ? { evalPuzzles: options.evalPuzzles } : {}),
      };
      // A real instruction-tuned model writes the format already: only the tiny model warms up.
      if (!TINY_MODELS.includes(config.model)) config = { ...config, warmupTrajectories: 0 };
      const runId = options.runId ?? `run-${new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14)}`;
      const telemetry = { metricsPort: options.metricsPort, otlpEndpoint: options.otlpEndpoint };
      const summary = await withTelemetry({ serviceName: 'spa-generator', ...telemetry }, () =>
        runSpaLoop(config, { runsDir: options.runsDir, runId }),
      );
      printSummary(summary);
      console.log(summary.runDir);
    });
}

function printSummary(summary: LoopSummary): void {
  const pct = (x: number) => (100 * x).toFixed(1).padStart(6);
  const lines = [
    `SPA loop ${summary.config.name} (${summary.config.env}, model ${summary.config.model})`,
    ...summary.dataStages.map(dataStageLine),
    `  SFT          ${sftLine(summary.sft)}`,
    `  self-play    ${summary.selfPlay.trajectories} episodes → ${summary.selfPlay.rollouts} rollouts`,
    `  generator    policy versions used (version: batches): ${Object.entries(summary.generatorVersions)
      .map(([v, n]) => `v${v}: ${n}`)
      .join(', ')}`,
    '',
    `  policy            Pass@1  Pass@${summary.config.evalK}   (${summary.config.evalPuzzles} val puzzles × ${summary.config.evalK})`,
    ...summary.evaluations.map(
      (e) => `  ${`${e.policy} v${e.policyVersion}`.padEnd(16)} ${pct(e.pass1)}  ${pct(e.passK)}`,
    ),
    '',
    `  seconds      ${Object.entries(summary.seconds)
      .map(([stage, s]) => `${stage} ${s.toFixed(0)}`)
      .join(', ')}`,
    `  summary      ${summary.runDir}/summary.json`,
  ];
  console.log(lines.join('\n'));
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
  return (
    `${String(metrics['step'] ?? '-')} steps, val loss ${num('val_loss', 3)}, observation ppl ${num('observation_ppl', 1)}, ` +
    `next-state exact match ${num('next_state_exact_match', 3)} on ${String(metrics['exact_match_rows'] ?? '-')} held-out rows`
  );
}
