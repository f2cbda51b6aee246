/**
 * The export stage: a model becomes an ONNX policy version under the run's policies folder, the
 * policy the generator plays (v0 for self-play's SFT data, v1 as PPO's start without world-model SFT).
 */
import { join } from 'node:path';
import type { LoopContext } from './context.js';
import { exportCommand } from './trainer-args.js';
import { startTrainer } from './trainers.js';

/** The stage `export v<version>`: {@link runExport} under the stage timer (kept on resume). */
export function exportPolicy(
  ctx: LoopContext,
  model: string,
  version: number,
  publish: boolean,
): Promise<string> {
  return ctx.timed(`export v${version}`, () => runExport(ctx, model, version, publish));
}

/**
 * Exports `model` (a HF folder, `tiny` or a trainer run folder) as ONNX policy `version` under the
 * run's policies folder, announcing it on the run's policy topic when `publish`; returns its folder.
 */
async function runExport(
  ctx: LoopContext,
  model: string,
  version: number,
  publish: boolean,
): Promise<string> {
  const root = join(ctx.runDir, 'policies');
  const command = exportCommand(ctx.config, {
    model,
    root,
    version,
    ...(publish ? { publish: { topic: ctx.kafka.topics.policy, brokers: ctx.brokers } } : {}),
  });
  // one process: the export runs no data-parallel ranks
  await startTrainer(ctx, command, 'export', 1).done;
  return policyFolder(root, version);
}

/** Where the trainer exports policy `version` under `root`: `v` and the version in 6 digits. */
export function policyFolder(root: string, version: number): string {
  return join(root, `v${String(version).padStart(6, '0')}`);
}
