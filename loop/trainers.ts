/**
 * The loop's trainer runs: each takes its command line from trainer-args.ts and runs it in the
 * trainer venv with the run's device and data-parallel ranks (trainer-process.ts).
 */
import { join } from 'node:path';
import type { LoopContext } from './context.js';
import {
  ppoServiceCommand,
  sftCommand,
  type Board,
  type SftRun,
  type TrainerCommand,
} from './trainer-args.js';
import { log } from './log.js';
import { openMpEnv } from './openmp-env.js';
import { runTrainerModule, trainerDeviceEnv, type TrainerProcess } from './trainer-process.js';

/**
 * Starts `command` on the run's device, echoing its lines under `label`; `beside`: cores the run's
 * own processes keep busy while it trains (the PPO service's generator shards).
 */
export function startTrainer(
  ctx: LoopContext,
  command: TrainerCommand,
  label: string,
  procs = ctx.config.trainerProcs,
  beside = 0,
): TrainerProcess {
  // passive OpenMP threads only beside other load (openmp-env.ts)
  const others = ctx.othersCores() + beside;
  const omp = openMpEnv(process.env, others);
  if (process.env['OMP_WAIT_POLICY'] === undefined && omp['OMP_WAIT_POLICY'] === 'PASSIVE')
    log(
      `${label}: passive trainer threads (OMP_WAIT_POLICY=PASSIVE): other processes use ${others.toFixed(1)} ` +
        `cores${beside > 0 ? `, ${beside} of them this run's generators beside it` : ''}`,
    );
  return runTrainerModule(ctx.python, command.module, command.args, {
    label,
    env: { ...omp, ...trainerDeviceEnv(ctx.config.device) },
    procs,
  });
}

/**
 * Where stage `stage` of the run reports its curves (`--report-to`): the TensorBoard run
 * `<run>/tensorboard/<stage>` (one TensorBoard run per stage: `spa board` shows them side by side)
 * and the W&B run `<run id>/<stage>`, grouped by run id.
 */
function boardOf(ctx: Pick<LoopContext, 'runDir' | 'runId'>, stage: string): Board {
  return { loggingDir: join(ctx.runDir, 'tensorboard', stage), runName: `${ctx.runId}/${stage}` };
}

/** `spa_trainer.sft` on `run` against the run's brokers, logging and reporting as `label`; resolves when it exits. */
export async function runSft(
  ctx: LoopContext,
  label: string,
  run: Omit<SftRun, 'brokers' | 'board'>,
): Promise<void> {
  const command = sftCommand(ctx.config, { ...run, brokers: ctx.brokers, board: boardOf(ctx, label) });
  await startTrainer(ctx, command, label).done;
}

/**
 * Starts the PPO service from `model` on the run's rollouts topic; it trains in `<run>/ppo` and
 * exports and publishes each policy version under `<run>/policies`.
 */
export function startPpoService(ctx: LoopContext, model: string): TrainerProcess {
  const { config, kafka, runDir } = ctx;
  const command = ppoServiceCommand(config, {
    model,
    topics: kafka.topics,
    out: join(runDir, 'ppo'),
    exportRoot: join(runDir, 'policies'),
    brokers: ctx.brokers,
    board: boardOf(ctx, 'ppo'),
  });
  // it trains while the generator shards play: each keeps a core busy
  return startTrainer(ctx, command, 'ppo', config.trainerProcs, config.generators);
}
