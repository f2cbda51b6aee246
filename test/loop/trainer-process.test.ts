import { afterEach, describe, expect, it, vi } from 'vitest';
import { loopConfig } from '../../loop/configs.js';
import type { LoopContext } from '../../loop/context.js';
import { trainerArgs } from '../../loop/trainer-process.js';
import { startTrainer } from '../../loop/trainers.js';

/**
 * What `OMP_WAIT_POLICY` a trainer started by the loop sees (python's timeit prints it once), with
 * `others` cores' worth of other processes' load at the stage's start.
 */
async function waitPolicySeen(others: number, beside = 0): Promise<string> {
  const lines: string[] = [];
  const write = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    lines.push(String(chunk));
    return true;
  });
  const ctx = { config: loopConfig('_2_sokoban'), python: 'python3', othersCores: () => others };
  try {
    const statement = "import os; print('policy', os.environ.get('OMP_WAIT_POLICY'))";
    const command = { module: 'timeit', args: ['-n', '1', '-r', '1', statement] };
    await startTrainer(ctx as unknown as LoopContext, command, 'probe', 1, beside).done;
  } finally {
    write.mockRestore();
  }
  const policy = /\[probe\] policy (\S+)/.exec(lines.join(''))?.[1] ?? `no policy line in ${lines.join('')}`;
  const said = lines.some((l) =>
    l.startsWith('[spa run] probe: passive trainer threads (OMP_WAIT_POLICY=PASSIVE)'),
  );
  // the run says so when it chose passive threads, and only then
  expect(said).toBe(policy === 'PASSIVE' && process.env['OMP_WAIT_POLICY'] === undefined);
  return policy;
}

describe('a trainer process on a shared machine (issue 43)', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('gets passive OpenMP threads, which sleep rather than spin, beside other processes', async () => {
    vi.stubEnv('OMP_WAIT_POLICY', undefined);
    expect(await waitPolicySeen(1.0)).toBe('PASSIVE');
  });

  it("keeps OpenMP's default on an idle machine, where spinning threads make small kernels fast", async () => {
    vi.stubEnv('OMP_WAIT_POLICY', undefined);
    expect(await waitPolicySeen(0.1)).toBe('None');
  });

  it("counts the run's own processes beside it (the PPO service's generator shards) as other load", async () => {
    vi.stubEnv('OMP_WAIT_POLICY', undefined);
    expect(await waitPolicySeen(0, 1)).toBe('PASSIVE');
  });

  it("keeps the user's OMP_WAIT_POLICY", async () => {
    vi.stubEnv('OMP_WAIT_POLICY', 'ACTIVE');
    expect(await waitPolicySeen(1.0)).toBe('ACTIVE');
    expect(await waitPolicySeen(0)).toBe('ACTIVE');
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
