import { describe, expect, it } from 'vitest';
import { trainerArgs } from '../../loop/trainer-process.js';

describe('trainerArgs', () => {
  it('runs the module in one process by default and with --trainer-procs 1, tied to this one', () => {
    const args = ['--input', 'kafka:spa.sft'];
    expect(trainerArgs('spa_trainer.sft', args)).toEqual([
      '-m',
      'spa_trainer.lifeline',
      'spa_trainer.sft',
      '--input',
      'kafka:spa.sft',
    ]);
    expect(trainerArgs('spa_trainer.sft', args, 1)).toEqual(trainerArgs('spa_trainer.sft', args));
  });

  it('runs it under torchrun with one rank per process above 1, torchrun and each rank tied', () => {
    expect(trainerArgs('spa_trainer.ppo_service', ['--steps', '3'], 4)).toEqual([
      '-m',
      'spa_trainer.lifeline',
      'torch.distributed.run',
      '--standalone',
      '--nproc_per_node',
      '4',
      '-m',
      'spa_trainer.lifeline',
      'spa_trainer.ppo_service',
      '--steps',
      '3',
    ]);
  });
});
