/**
 * The command lines of the trainer modules the loop runs (`spa_trainer.sft`,
 * `spa_trainer.ppo_service`, `spa_trainer.export`), built from the run's LoopConfig and the
 * stage's inputs and outputs. Every trainer flag the loop passes is written here and nowhere else,
 * so this one module can be generated from the schema the trainer emits (issue 34 item 3).
 */
import type { LoopConfig } from './configs.js';

/** A trainer module and its arguments: `python -m <module> …args` from trainer/. */
export interface TrainerCommand {
  readonly module: string;
  readonly args: string[];
}

/** One SFT run on a Kafka topic of SFT rows. */
export interface SftRun {
  /** The start model: a tiny model's name, a Hugging Face folder or a trainer run folder. */
  readonly model: string;
  readonly topic: string;
  readonly epochs: number;
  readonly lr: number;
  /** The trainer's run folder (checkpoints, metrics.json). */
  readonly out: string;
  readonly brokers: string;
  /** Held-out rows scored for next-state exact match. */
  readonly evalRows: number;
  /** The held-out share of the rows; the trainer's default when left out. */
  readonly valFraction?: number;
  /** Export the trained model as the next policy version under `root` and announce it on `topic`. */
  readonly publish?: { readonly root: string; readonly topic: string };
}

/** `spa_trainer.sft` on `run`, with the run's batch size, window and decision weight. */
export function sftCommand(config: LoopConfig, run: SftRun): TrainerCommand {
  const args = [
    ...['--model', run.model, '--input', `kafka:${run.topic}`],
    ...['--epochs', String(run.epochs), '--lr', String(run.lr)],
    ...['--batch-size', String(config.sftBatchSize), '--max-length', String(config.sftMaxLength)],
    ...['--decision-weight', String(config.decisionWeight)],
    ...['--out', run.out, '--brokers', run.brokers],
    ...(run.valFraction === undefined ? [] : ['--val-fraction', String(run.valFraction)]),
    ...['--eval-rows', String(run.evalRows)],
    ...(run.publish ? ['--export', run.publish.root, '--publish', run.publish.topic] : []),
  ];
  return { module: 'spa_trainer.sft', args };
}

/** The PPO service's inputs and outputs. */
export interface PpoRun {
  readonly model: string;
  /** The run's topics: rollouts in, policy updates out, rejects to its own DLQ. */
  readonly topics: { readonly rollouts: string; readonly policy: string; readonly dlq: string };
  readonly out: string;
  /** Where each exported policy version goes. */
  readonly exportRoot: string;
  readonly brokers: string;
}

/** `spa_trainer.ppo_service` with the run's PPO settings on its rollouts topic. */
export function ppoServiceCommand(config: LoopConfig, run: PpoRun): TrainerCommand {
  const args = [
    ...['--model', run.model, '--input', `kafka:${run.topics.rollouts}`, '--out', run.out],
    ...['--steps', String(config.ppoSteps), '--groups-per-step', String(config.ppoGroups)],
    ...['--group-size', String(config.ppoGroupSize), '--keep-ratio', String(config.ppoKeepRatio)],
    ...['--export-every', String(config.exportEvery), '--export-root', run.exportRoot],
    ...['--publish', run.topics.policy, '--max-staleness', String(config.maxStaleness)],
    ...['--mask', config.ppoMask, '--loss-agg', config.ppoLossAgg],
    ...['--kl-loss-coef', String(config.ppoKlCoef)],
    ...['--adv-estimator', config.ppoAdvEstimator === 'gae' ? 'gae' : 'grpo'],
    ...(config.ppoAdvEstimator === 'grpo-mean' ? ['--no-grpo-std-norm'] : []),
    ...['--actor-lr', String(config.ppoActorLr), '--critic-lr', String(config.ppoCriticLr)],
    ...['--micro-batch-size', String(config.ppoMicroBatch), '--ppo-epochs', String(config.ppoEpochs)],
    ...['--mini-batch-size', String(config.ppoMiniBatch)],
    // The generator's window: PPO scores each turn on the prompt it was sampled from (docs/spa-ppo.md#window).
    ...(config.contextWindow > 0
      ? ['--context-window', String(config.contextWindow), '--max-new-tokens', String(config.maxNewTokens)]
      : []),
    // the run's own topic: spa.dlq may not exist on this broker
    ...['--dlq', `kafka:${run.topics.dlq}`, '--brokers', run.brokers],
  ];
  return { module: 'spa_trainer.ppo_service', args };
}

/** One export of a model as an ONNX policy version. */
export interface ExportRun {
  readonly model: string;
  /** The run's policies folder; the version goes to `<root>/v<version, 6 digits>`. */
  readonly root: string;
  readonly version: number;
  /** Announce the version on this policy topic. */
  readonly publish?: { readonly topic: string; readonly brokers: string };
}

/** `spa_trainer.export` of an `init` policy named after the run's model. */
export function exportCommand(config: LoopConfig, run: ExportRun): TrainerCommand {
  const args = [
    ...['--model', run.model, '--out', run.root, '--stage', 'init', '--version', String(run.version)],
    ...['--name', config.model],
    ...(run.publish ? ['--publish', run.publish.topic, '--brokers', run.publish.brokers] : []),
  ];
  return { module: 'spa_trainer.export', args };
}
