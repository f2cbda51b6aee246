/**
 * OpenMP settings of the trainer processes on a machine they may share. torch's CPU kernels run on
 * OpenMP threads, which by default spin a while when they wait for work. On an idle machine that
 * is what makes a tiny model's many small kernels fast; beside another CPU-bound process the
 * spinning threads hold the core the other needs and the trainer collapses rather than slows. So a
 * trainer gets passive threads (they sleep while they wait) only when other processes use the CPU
 * as it starts. Issue 43 (`npm run bench -- trainer-share`, tiny-local on 2 cores,
 * docs/spa-loop.md#shared-machine): idle, passive threads train at 0.75× the default's tok/s; beside
 * one busy process the default keeps 0.65× of the trainer's fair share, passive threads 1.14×.
 */

/** Cores' worth of other processes' CPU use (the last minute) from which trainer threads are passive. */
const PASSIVE_FROM_CORES = 0.5;

/**
 * The OpenMP variables a trainer process gets: the user's `OMP_WAIT_POLICY` when `env` sets it,
 * else `PASSIVE` when other processes use at least {@link PASSIVE_FROM_CORES} cores
 * (`othersCores`, busy-machine.ts), else none (OpenMP's default).
 */
export function openMpEnv(env: NodeJS.ProcessEnv, othersCores: number): NodeJS.ProcessEnv {
  const set = env['OMP_WAIT_POLICY'];
  if (set !== undefined) return { OMP_WAIT_POLICY: set };
  return othersCores >= PASSIVE_FROM_CORES ? { OMP_WAIT_POLICY: 'PASSIVE' } : {};
}
