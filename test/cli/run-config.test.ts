/**
 * `spa run`'s knobs: every `LoopConfig` field from `--config-file` and flags, with errors that name
 * the field and line, and the precedence built-in config < `--full` < file < flags. The loop itself
 * is replaced by a function that records the config it would run.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import { describe, expect, it, vi } from 'vitest';
import { registerRunCommand } from '../../cli/commands/run.js';
import { LOOP_CONFIGS, SPA_FULL_SIZE, type LoopConfig } from '../../loop/configs.js';
import { LOOP_FIELDS } from '../../cli/run/loop-fields.js';

/** Parses `spa run <args>`; resolves with the config the loop would run, or rejects with the error text. */
async function runConfig(args: readonly string[]): Promise<LoopConfig> {
  let seen: LoopConfig | undefined;
  let errors = '';
  const program = new Command('spa')
    .exitOverride()
    .configureOutput({ writeErr: (text) => (errors += text), writeOut: () => {} });
  registerRunCommand(program, async (config) => {
    seen = config;
  });
  try {
    await program.parseAsync(['run', ...args], { from: 'user' });
  } catch (error) {
    throw new Error(errors || (error as Error).message);
  }
  return seen!;
}

function fileWith(yamlText: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'spa-run-config-')), 'run.yaml');
  writeFileSync(path, yamlText);
  return path;
}

/** A value for every field, each different from the default config's. */
const EVERY_FIELD = `
config: _3_frozen_lake
generator: random
generators: 3
warmup-trajectories: 7
warmup-epochs: 2
warmup-lr: 0.01
warmup-batch-size: 6
warmup-explore: 0.25
warmup-explore-modes: base
warmup-actions-per-turn: 1
warmup-states: empty
warmup-seed: 3
warmup-modes: base,base-wm
decision-weight: 4
sft-decision-weight: 50
skip-world-model-sft: true
filter-envs: sokoban,sudoku
filter-parser-reasons: true
annotation: gt-fill
sft-prompts: base
sft-groups: 3
sft-group-size: 2
sft-batches: 4
sft-epochs: 6
sft-lr: 2.5e-4
sft-batch-size: 5
sft-micro-batch-size: 5
sft-max-length: 300
ppo-steps: 6
ppo-groups-per-step: 2
ppo-group-size: 3
ppo-keep-ratio: 0.5
export-every: 3
max-staleness: 0
ppo-mask: all-after-system
ppo-loss-agg: seq-mean-token-mean
ppo-kl-loss-coef: 0.05
ppo-adv-estimator: grpo-mean
ppo-actor-lr: 0
ppo-critic-lr: 2e-5
ppo-micro-batch-size: 3
ppo-epochs: 2
ppo-mini-batch-size: 32
eval-puzzles: 9
eval-k: 4
eval-passes: 3
eval-sft: true
eval-curve: true
eval-every: 10
max-new-tokens: 99
stop-at-answer: true
context-window: 777
model: /models/qwen
device: cuda
trainer-procs: 2
report-to: tensorboard,wandb
`;

describe('spa run --config-file', () => {
  it('sets every LoopConfig field from the file', async () => {
    expect(await runConfig(['--config-file', fileWith(EVERY_FIELD)])).toEqual({
      name: '_3_frozen_lake',
      env: 'frozenlake',
      generator: 'random',
      generators: 3,
      warmupTrajectories: 7,
      warmupEpochs: 2,
      warmupLr: 0.01,
      warmupBatchSize: 6,
      warmupExplore: 0.25,
      warmupExploreModes: ['base'],
      warmupActionsPerTurn: 1,
      warmupStates: 'empty',
      warmupSeed: 3,
      warmupModes: ['base', 'base-wm'],
      decisionWeight: 4,
      sftDecisionWeight: 50,
      skipWorldModelSft: true,
      filterEnvs: ['sokoban', 'sudoku'],
      filterParserReasons: true,
      annotation: 'gt-fill',
      sftPrompts: ['base'],
      sftGroups: 3,
      sftGroupSize: 2,
      sftBatches: 4,
      sftEpochs: 6,
      sftLr: 2.5e-4,
      sftBatchSize: 5,
      sftMicroBatchSize: 5,
      sftMaxLength: 300,
      ppoSteps: 6,
      ppoGroupsPerStep: 2,
      ppoGroupSize: 3,
      ppoKeepRatio: 0.5,
      exportEvery: 3,
      maxStaleness: 0,
      ppoMask: 'all-after-system',
      ppoLossAgg: 'seq-mean-token-mean',
      ppoKlLossCoef: 0.05,
      ppoAdvEstimator: 'grpo-mean',
      ppoActorLr: 0,
      ppoCriticLr: 2e-5,
      ppoMicroBatchSize: 3,
      ppoEpochs: 2,
      ppoMiniBatchSize: 32,
      evalPuzzles: 9,
      evalK: 4,
      evalPasses: 3,
      evalSftPolicy: true,
      evalCurve: true,
      evalEvery: 10,
      maxNewTokens: 99,
      stopAtAnswer: true,
      contextWindow: 777,
      model: '/models/qwen',
      device: 'cuda',
      trainerProcs: 2,
      reportTo: ['tensorboard', 'wandb'],
    } satisfies LoopConfig);
  });

  it('has a key for every field of the table, and --help lists each', async () => {
    const keys = EVERY_FIELD.trim()
      .split('\n')
      .map((line) => line.split(':')[0]);
    expect(keys).toHaveLength(Object.keys(LOOP_FIELDS).length + 1); // + config
    let help = '';
    const program = new Command('spa').exitOverride().configureOutput({ writeOut: (t) => (help += t) });
    registerRunCommand(program, async () => {});
    await expect(program.parseAsync(['run', '--help'], { from: 'user' })).rejects.toThrow();
    for (const key of keys) expect(help).toContain(`--${key} `);
    expect(help).toContain('--config-file <path>');
  });

  it('still reads the renamed PPO fields by their earlier names, saying the new ones', async () => {
    const notices: string[] = [];
    const spy = vi
      .spyOn(process.stderr, 'write')
      .mockImplementation((text) => notices.push(String(text)) > 0);
    try {
      const file = fileWith('ppo-groups: 2\nppo-kl-coef: 0.05\n');
      const config = await runConfig([
        '--config-file',
        file,
        '--ppo-micro-batch',
        '3',
        '--ppo-mini-batch',
        '32',
      ]);
      expect(config).toMatchObject({
        ppoGroupsPerStep: 2,
        ppoKlLossCoef: 0.05,
        ppoMicroBatchSize: 3,
        ppoMiniBatchSize: 32,
      });
    } finally {
      spy.mockRestore();
    }
    expect(notices.join('')).toContain('--ppo-groups is deprecated: it is --ppo-groups-per-step now');
    expect(notices.filter((n) => n.includes('is deprecated'))).toHaveLength(4);
    await expect(runConfig(['--ppo-groups', '0'])).rejects.toThrow('--ppo-groups');
  });

  it('refuses an unknown field, naming it and its line', async () => {
    await expect(
      runConfig(['--config-file', fileWith('ppo-steps: 2\nsft-learning-rate: 1e-4\n')]),
    ).rejects.toThrow(/sft-learning-rate: unknown field; see --help for the fields \(line 2\)/);
  });

  it('refuses a bad value, naming the field, the value and its line', async () => {
    const file = fileWith('sft-lr: 1e-4\nexport-every: 0\nppo-mask: prediction\n');
    const error = runConfig(['--config-file', file]);
    await expect(error).rejects.toThrow('export-every: must be an integer in 1..100000, got "0" (line 2)');
    await expect(runConfig(['--config-file', file])).rejects.toThrow(
      'ppo-mask: must be one of generated, response-only, all-after-system, got "prediction" (line 3)',
    );
    await expect(runConfig(['--sft-lr', '-1'])).rejects.toThrow(
      '--sft-lr must be a number with 0 < x ≤ 1, got "-1"',
    );
    await expect(runConfig(['--generators', '0'])).rejects.toThrow(
      '--generators must be an integer in 1..256, got "0"',
    );
    await expect(runConfig(['--filter-envs', 'sokoban,lake'])).rejects.toThrow(
      /--filter-envs must be "none" or a comma-separated list of sokoban, frozenlake, sudoku: unknown env "lake"/,
    );
    expect((await runConfig(['--filter-envs', 'none'])).filterEnvs).toEqual([]);
    await expect(runConfig(['--warmup-modes', 'wm,chat'])).rejects.toThrow(
      '--warmup-modes must be a comma-separated list of wm, base, base-wm, got "wm,chat"',
    );
    await expect(runConfig(['--warmup-actions-per-turn', '6'])).rejects.toThrow(
      '--warmup-actions-per-turn must be an integer in 1..5, got "6"',
    );
    await expect(runConfig(['--warmup-explore', '0.5', '--warmup-actions-per-turn', '2'])).rejects.toThrow(
      /--warmup-explore 0.5 with --warmup-actions-per-turn 2: .* use --warmup-actions-per-turn 1/,
    );
    expect((await runConfig(['--warmup-modes', 'base, wm'])).warmupModes).toEqual(['base', 'wm']);
    await expect(runConfig(['--generator', 'oracle', '--sft-group-size', '8'])).rejects.toThrow(
      /--generator oracle with --sft-group-size 8: the oracle is deterministic/,
    );
  });

  it('takes built-in config < --full < file < flags', async () => {
    const base = LOOP_CONFIGS['_2_sokoban']!;
    expect(await runConfig([])).toEqual(base);
    const full = await runConfig(['--full']);
    expect(full).toEqual({ ...base, ...SPA_FULL_SIZE });
    const file = fileWith('full: true\nppo-steps: 6\nexport-every: 3\nsft-lr: 0.002\n');
    const fromFile = await runConfig(['--config-file', file]);
    expect(fromFile).toEqual({ ...base, ...SPA_FULL_SIZE, ppoSteps: 6, exportEvery: 3, sftLr: 0.002 });
    const flags = await runConfig(['--config-file', file, '--export-every', '2', '--sft-lr', '0.01']);
    expect(flags).toEqual({ ...fromFile, exportEvery: 2, sftLr: 0.01 });
  });

  it('makes a model folder absolute (trainer processes run elsewhere) and keeps tiny names', async () => {
    expect((await runConfig(['--model', 'runs/x/warmup'])).model).toBe(resolve('runs/x/warmup'));
    expect((await runConfig(['--model', 'tiny-cells'])).model).toBe('tiny-cells');
  });

  it('weights the decision tokens of a tiny model only unless asked for', async () => {
    expect((await runConfig([])).decisionWeight).toBe(20);
    expect((await runConfig(['--model', '/models/qwen'])).decisionWeight).toBe(1);
    expect((await runConfig(['--model', '/models/qwen', '--decision-weight', '5'])).decisionWeight).toBe(5);
    expect((await runConfig([])).sftDecisionWeight).toBe(100);
    expect((await runConfig(['--model', '/models/qwen'])).sftDecisionWeight).toBe(1);
    const given = await runConfig(['--model', '/models/qwen', '--sft-decision-weight', '5']);
    expect(given.sftDecisionWeight).toBe(5);
  });

  it('warms up only the tiny model unless asked for', async () => {
    expect((await runConfig(['--model', '/models/qwen'])).warmupTrajectories).toBe(0);
    expect(
      (await runConfig(['--model', '/models/qwen', '--warmup-trajectories', '16'])).warmupTrajectories,
    ).toBe(16);
    expect((await runConfig([])).warmupTrajectories).toBe(LOOP_CONFIGS['_2_sokoban']!.warmupTrajectories);
  });

  it("gives a tiny model's policy its SFT window and a real model the whole prompt unless asked for", async () => {
    // the prompt tokens SFT showed beside a 173-token turn, plus the generation budget
    expect((await runConfig([])).contextWindow).toBe(340 - 173 + 200);
    expect((await runConfig(['--sft-max-length', '1024'])).contextWindow).toBe(1024 - 173 + 200);
    expect((await runConfig(['--max-new-tokens', '100'])).contextWindow).toBe(340 - 173 + 100);
    expect((await runConfig(['--sft-max-length', '1024', '--context-window', '600'])).contextWindow).toBe(
      600,
    );
    expect((await runConfig(['--model', '/models/qwen'])).contextWindow).toBe(0);
    expect((await runConfig(['--model', '/models/qwen', '--context-window', '4096'])).contextWindow).toBe(
      4096,
    );
  });
});
