import { setImmediate } from 'node:timers/promises';

/**
 * A pause that lets the event loop run (timers, I/O, a Ctrl-C handler) once `sliceMs` of
 * synchronous work have passed since it last ran, and otherwise returns at once. A batch of many
 * episodes is seconds of work between two awaits (creating envs, building prompts, playing
 * turns); the loops over it call this per episode so `spa run` still stops within moments.
 * Hand-written: RxJS schedulers slice Observables, not the plain loops inside one batch.
 */
export function timeSlices(sliceMs = 20): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < sliceMs) return;
    await setImmediate();
    since = performance.now();
  };
}
