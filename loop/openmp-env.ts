/**
 * OpenMP settings of the trainer processes on a machine they may share. torch's CPU kernels run on
 * OpenMP threads, which by default spin while they wait for work; beside another CPU-bound process
 * the spinning threads hold the cores the others need and the trainer collapses rather than slows
 * (issue 43: SFT of tiny-local beside one other training process, mean tok/s: 3,099 by default,
 * 10,422 with OMP_WAIT_POLICY=PASSIVE, 15,138 with one thread). Passive threads sleep while they
 * wait, which costs nothing measurable on an idle machine (docs/spa-loop.md#shared-machine).
 */

/** The OpenMP variables a trainer process gets: `OMP_WAIT_POLICY=PASSIVE` unless `env` sets it. */
export function openMpEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { OMP_WAIT_POLICY: env['OMP_WAIT_POLICY'] ?? 'PASSIVE' };
}
