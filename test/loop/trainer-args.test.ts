/**
 * loop/trainer-args.ts builds every trainer command line of the loop from the LoopConfig: the
 * flags and values of the default run's SFT, PPO service and export, as the trainers read them.
 */
import { describe, expect, it } from 'vitest';
import { loopConfig } from '../../loop/configs.js';
import trainerSettings from '../../schemas/trainer-settings.json' with { type: 'json' };
import {
  exportCommand,
  fromLoop,
  ppoServiceCommand,
  sftCommand,
  trainerCommand,
} from '../../loop/trainer-args.js';

const config = loopConfig('_2_sokoban');

/** `['--a', '1', '--b', '--c', '2']` as `{ '--a': '1', '--b': true, '--c': '2' }`. */
function flags(args: readonly string[]): Record<string, string | true> {
  const out: Record<string, string | true> = {};
  args.forEach((arg, i) => {
    if (!arg.startsWith('--')) return;
    const next = args[i + 1];
    out[arg] = next === undefined || next.startsWith('--') ? true : next;
  });
  return out;
}

describe('trainer-args', () => {
  it('gives world-model SFT its run, the config batch size, window and decision weight, and the export', () => {
    const command = sftCommand(config, {
      model: '/runs/r/warmup',
      topic: 'spa.r.sft',
      epochs: config.sftEpochs,
      lr: config.sftLr,
      decisionWeight: config.sftDecisionWeight,
      out: '/runs/r/sft',
      brokers: 'b:1',
      evalRows: 96,
      publish: { root: '/runs/r/policies', topic: 'spa.r.policy' },
    });
    expect(command.module).toBe('spa_trainer.sft');
    expect(flags(command.args)).toEqual({
      '--model': '/runs/r/warmup',
      '--input': 'kafka:spa.r.sft',
      '--epochs': String(config.sftEpochs),
      '--lr': String(config.sftLr),
      '--batch-size': String(config.sftBatchSize),
      '--micro-batch-size': String(config.sftMicroBatchSize),
      '--max-length': String(config.sftMaxLength),
      '--decision-weight': String(config.sftDecisionWeight),
      '--out': '/runs/r/sft',
      '--brokers': 'b:1',
      '--eval-rows': '96',
      '--export': '/runs/r/policies',
      '--publish': 'spa.r.policy',
      '--report-to': 'tensorboard',
    });
  });

  it('gives a run with its own batch size (the warm-up) that batch, in one forward pass', () => {
    const args = flags(
      sftCommand({ ...config, sftBatchSize: 16, sftMicroBatchSize: 1 }, { ...sftRun(), batchSize: 8 }).args,
    );
    expect([args['--batch-size'], args['--micro-batch-size']]).toEqual(['8', '8']);
  });

  it("reports each stage's curves where --report-to says, in the stage's TensorBoard folder and W&B run", () => {
    const board = { loggingDir: '/runs/r/tensorboard/sft', runName: 'r/sft' };
    const both = { ...config, reportTo: ['tensorboard', 'wandb'] as const };
    const sft = sftCommand(both, { ...sftRun(), board }).args;
    expect(sft.slice(sft.indexOf('--report-to'), sft.indexOf('--report-to') + 3)).toEqual([
      '--report-to',
      'tensorboard',
      'wandb',
    ]);
    expect(flags(sft)).toMatchObject({ '--logging-dir': '/runs/r/tensorboard/sft', '--run-name': 'r/sft' });
    const ppo = flags(ppoServiceCommand({ ...config, reportTo: ['none'] }, { ...baseRun(), board }).args);
    expect(ppo).toMatchObject({ '--report-to': 'none', '--logging-dir': '/runs/r/tensorboard/sft' });
    expect(() => trainerCommand('sft', { input: 'i', report_to: ['comet'] })).toThrow(
      'spa_trainer.sft --report-to must be one or more of none, tensorboard, wandb, got comet',
    );
  });

  it('gives the warm-up SFT a held-out share and no export', () => {
    const run = sftRun();
    const args = flags(sftCommand(config, { ...run, valFraction: 0.1 }).args);
    expect(args['--val-fraction']).toBe('0.1');
    expect(args['--export']).toBeUndefined();
    expect(flags(sftCommand(config, run).args)['--val-fraction']).toBeUndefined();
  });

  it("gives the PPO service every PPO setting of the config and the run's own DLQ", () => {
    const command = ppoServiceCommand(
      { ...config, ppoAdvEstimator: 'grpo-mean', contextWindow: 256 },
      {
        model: '/runs/r/sft',
        topics: { rollouts: 'spa.r.rollouts', policy: 'spa.r.policy', dlq: 'spa.r.dlq' },
        out: '/runs/r/ppo',
        exportRoot: '/runs/r/policies',
        brokers: 'b:1',
      },
    );
    expect(command.module).toBe('spa_trainer.ppo_service');
    const args = flags(command.args);
    expect(args).toMatchObject({
      '--model': '/runs/r/sft',
      '--input': 'kafka:spa.r.rollouts',
      '--steps': String(config.ppoSteps),
      '--groups-per-step': String(config.ppoGroupsPerStep),
      '--group-size': String(config.ppoGroupSize),
      '--keep-ratio': String(config.ppoKeepRatio),
      '--export-every': String(config.exportEvery),
      '--export-root': '/runs/r/policies',
      '--publish': 'spa.r.policy',
      '--max-staleness': String(config.maxStaleness),
      '--adv-estimator': 'grpo',
      '--no-grpo-std-norm': true,
      '--context-window': '256',
      '--max-new-tokens': String(config.maxNewTokens),
      '--dlq': 'kafka:spa.r.dlq',
      '--brokers': 'b:1',
    });
    const whole = flags(ppoServiceCommand({ ...config, contextWindow: 0 }, { ...baseRun() }).args);
    expect(whole['--context-window']).toBeUndefined();
    expect(whole['--no-grpo-std-norm']).toBeUndefined();
  });

  it('passes only flags of schemas/trainer-settings.json, with its modules', () => {
    const sft = sftCommand(config, { ...sftRun(), valFraction: 0.1, publish: { root: 'r', topic: 't' } });
    const ppo = ppoServiceCommand({ ...config, ppoAdvEstimator: 'grpo-mean', contextWindow: 256 }, baseRun());
    for (const [command, name] of [
      [sft, 'sft'],
      [ppo, 'ppo'],
    ] as const) {
      const schema = trainerSettings.$defs[name];
      const known = Object.values(schema.properties).flatMap((p) => [
        p['x-flag'],
        `--no-${p['x-flag'].slice(2)}`,
      ]);
      expect(Object.keys(flags(command.args)).filter((flag) => !known.includes(flag))).toEqual([]);
      expect(command.module).toBe(schema['x-module']);
    }
  });

  it('names settings by trainer field: an unknown name does not compile, a refused value throws', () => {
    // @ts-expect-error -- not a field of the PPO service's config (the trainer calls it keep_ratio)
    expect(() => trainerCommand('ppo', { ...ppoRequired, group_keep_ratio: 0.5 })).not.toThrow();
    expect(() => trainerCommand('ppo', { ...ppoRequired, keep_ratio: 0 })).toThrow(
      'spa_trainer.ppo_service --keep-ratio must be a number with 0 < x ≤ 1, got 0',
    );
    expect(() => trainerCommand('ppo', { ...ppoRequired, group_size: 2.5 })).toThrow(
      '--group-size must be of type integer, got 2.5',
    );
    expect(() => trainerCommand('ppo', { ...ppoRequired, mask: 'everything' })).toThrow(
      '--mask must be one of generated, response-only, all-after-system, got everything',
    );
    expect(() => trainerCommand('ppo', { model: 'm', input: 'i', out: 'o' })).toThrow(
      'spa_trainer.ppo_service: no value for steps',
    );
    expect(trainerCommand('ppo', { ...ppoRequired, grpo_std_norm: true }).args).not.toContain(
      '--grpo-std-norm',
    );
  });

  it('reads a LoopConfig field by the trainer setting it feeds, prefixed by its stage or not', () => {
    expect(fromLoop<'ppo', 'ppo'>(config, 'ppo', ['keep_ratio', 'export_every'])).toEqual({
      keep_ratio: config.ppoKeepRatio,
      export_every: config.exportEvery,
    });
    // @ts-expect-error -- LoopConfig has no field of this name (its ppoAdvEstimator grpo-mean sets it)
    expect(fromLoop<'ppo', 'ppo'>(config, 'ppo', ['grpo_std_norm'])).toEqual({ grpo_std_norm: undefined });
  });

  it('exports an init policy named after the model, publishing only when asked', () => {
    const root = '/runs/r/policies';
    const quiet = exportCommand(config, { model: 'm', root, version: 0 });
    expect(quiet.module).toBe('spa_trainer.export');
    expect(flags(quiet.args)).toEqual({
      '--model': 'm',
      '--out': root,
      '--stage': 'init',
      '--version': '0',
      '--name': config.model,
    });
    const published = exportCommand(config, {
      model: 'm',
      root,
      version: 1,
      publish: { topic: 'p', brokers: 'b' },
    });
    expect(flags(published.args)).toMatchObject({ '--version': '1', '--publish': 'p', '--brokers': 'b' });
  });
});

const ppoRequired = { model: 'm', input: 'jsonl:r', out: 'o', steps: 1 };

function sftRun() {
  return {
    model: 'tiny',
    topic: 't',
    epochs: 1,
    lr: 0.001,
    decisionWeight: 20,
    out: 'o',
    brokers: 'b',
    evalRows: 96,
  };
}

function baseRun() {
  return {
    model: 'm',
    topics: { rollouts: 'r', policy: 'p', dlq: 'd' },
    out: 'o',
    exportRoot: 'e',
    brokers: 'b',
  };
}
