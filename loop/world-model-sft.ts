/**
 * Stage 2, world-model SFT (docs/spa-sft.md): the Python trainer finetunes the start model on the
 * run's `sft` topic, scores held-out rows, and exports and publishes the result as policy v1.
 */
import { join } from 'node:path';
import type { LoopContext } from './context.js';
import { readSftMetrics, type SftMetricsFile } from './trainer-files.js';
import { runSft } from './trainers.js';
import { SFT_EXACT_MATCH_ROWS } from './warmup.js';

/** The stage `sft` from `startModel`; its run folder `<run>/sft` is where PPO starts. */
export function worldModelSft(ctx: LoopContext, startModel: string): Promise<SftMetricsFile> {
  const { config, kafka, runDir } = ctx;
  return ctx.timed('sft', async () => {
    const out = join(runDir, 'sft');
    await runSft(ctx, 'sft', {
      model: startModel,
      topic: kafka.topics.sft,
      epochs: config.sftEpochs,
      lr: config.sftLr,
      decisionWeight: config.sftDecisionWeight,
      out,
      evalRows: SFT_EXACT_MATCH_ROWS,
      publish: { root: join(runDir, 'policies'), topic: kafka.topics.policy },
    });
    return readSftMetrics(out);
  });
}
