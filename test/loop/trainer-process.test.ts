import { afterEach, describe, expect, it, vi } from 'vitest';
import { runTrainerModule, trainerArgs } from '../../loop/trainer-process.js';

/** What `OMP_WAIT_POLICY` a process started by runTrainerModule sees (python's timeit prints it once). */
async function waitPolicySeen(env?: NodeJS.ProcessEnv): Promise<string> {
  const lines: string[] = [];
  const write = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    const statement = "import os; print('policy', os.environ.get('OMP_WAIT_POLICY'))";
    await runTrainerModule('python3', 'timeit', ['-n', '1', '-r', '1', statement], { label: 'probe', env })
      .done;
  } finally {
    write.mockRestore();
  }
  return /\[probe\] policy (\S+)/.exec(lines.join(''))?.[1] ?? `no policy line in ${lines.join('')}`;
}

describe('a trainer process on a shared machine (issue 43)', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('gets passive OpenMP threads, which sleep rather than spin while they wait', async () => {
    vi.stubEnv('OMP_WAIT_POLICY', undefined);
    expect(await waitPolicySeen()).toBe('PASSIVE');
  });

  it("keeps the user's OMP_WAIT_POLICY", async () => {
    vi.stubEnv('OMP_WAIT_POLICY', 'ACTIVE');
    expect(await waitPolicySeen()).toBe('ACTIVE');
  });
});

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
