/**
 * Stage 1, the world-model SFT data on the run's `sft` topic (docs/spa-loop.md): with `self-play`
 * (SPA) the model being trained, warmed up and exported as policy v0, plays the world-model
 * prompts; with `oracle` / `random` a built-in policy does. Either way `generators` processes play
 * them (generator-shards.ts): annotate with ground-truth states → filter → spa.<run>.sft.
 */
import { basename } from 'node:path';
import type { PromptMode } from '../envs/protocol/index.js';
import type { EpisodeConfig } from '../streams/episodes/episode-config.js';
import { episodeConfig } from '../streams/episodes/episode-config.js';
import type { LoopContext } from './context.js';
import { dataStageSummary, purgeDataTopics, type DataStageSummary } from './data-stage.js';
import { exportPolicy } from './export-policy.js';
import { onnxPolicyFlags } from './generation.js';
import { generateFlags, generateInShards, generatorProcesses } from './generator-shards.js';
import type { SftMetricsFile } from './trainer-files.js';
import { formatWarmup } from './warmup.js';

/** Stage 1's result: its data stages, the warm-up's metrics and the model world-model SFT starts from. */
export interface SftData {
  readonly dataStages: DataStageSummary[];
  readonly warmup: SftMetricsFile | null;
  readonly sftStartModel: string;
}

/** Who plays a data stage: the `spa generate` flags of its policy and how the summary names it. */
interface Player {
  readonly flags: readonly string[];
  readonly describe: DataStageSummary['policy'];
}

/**
 * The SFT data: a built-in generator's (`sft data`), or, for `self-play`, the format warm-up, the
 * export of v0 and v0's self-play (`self-play sft data`). Returns the data stages and the model
 * the SFT stage starts from (the warmed-up checkpoint when there was a warm-up).
 */
export async function sftData(ctx: LoopContext): Promise<SftData> {
  const { config } = ctx;
  const generator = config.generator;
  if (generator !== 'self-play') {
    const player = {
      flags: ['--policy', generator, '--policy-seed', '0'],
      describe: { name: generator, version: null },
    };
    const data = await playSftData(ctx, 'sft data', `sft data (${generator})`, player, ['wm']);
    return { dataStages: data, warmup: null, sftStartModel: config.model };
  }
  const warmup = await formatWarmup(ctx);
  const v0 = await exportPolicy(ctx, warmup.model, 0, false);
  // named as the ONNX policy names itself; its manifest's version is the export's, 0
  const player = {
    flags: onnxPolicyFlags(config, `onnx:${v0}`, 0),
    describe: { name: `onnx:${basename(v0)}`, version: 0 },
  };
  const selfPlay = await playSftData(
    ctx,
    'self-play sft data',
    'self-play sft data',
    player,
    config.sftPrompts,
  );
  const rows = selfPlay.reduce((a, s) => a + s.rowsAccepted, 0);
  if (rows === 0)
    throw new Error(
      `self-play with ${player.describe.name} v${player.describe.version} produced no accepted SFT rows ` +
        `(rejected: ${JSON.stringify(selfPlay.map((s) => s.rejectsByReason))}): nothing to finetune on; a larger ` +
        `format warm-up (warmupTrajectories, warmupEpochs) or --generator oracle would give data`,
    );
  return { dataStages: [...warmup.data, ...selfPlay], warmup: warmup.metrics, sftStartModel: warmup.model };
}

/**
 * The data stage `stage` (`label` in the progress lines and summary.json): `player` plays the SFT
 * episodes in each of `prompts` (each on its own puzzles; SPA: world-model prompts only,
 * docs/spa-loop.md#sft-mix) in the run's generator processes, under the run's malformed filter and
 * annotation. One stage for all prompts: a redo first deletes what the cut-off attempt committed to
 * the run's data topics, so the prompts are played again together.
 */
function playSftData(
  ctx: LoopContext,
  stage: string,
  label: string,
  player: Player,
  prompts: readonly PromptMode[],
): Promise<DataStageSummary[]> {
  const played = ctx.timed(stage, async ({ redo }) => {
    const { config, kafka } = ctx;
    if (redo) await purgeDataTopics(kafka, label);
    const summaries: DataStageSummary[] = [];
    for (const [index, mode] of prompts.entries()) {
      // SPA's own prompts keep the stage's name; the base prompts' rows are the tiny model's addition
      const part = mode === 'wm' ? label : `${label} (${mode} prompts)`;
      process.stderr.write(`[${part}] ${generatorProcesses(config.generators)} (spa generate --shard)\n`);
      const args = [
        ...generateFlags(sftEpisodes(ctx, mode, index), 'sft', kafka.topics),
        ...['--prompts', mode],
        ...['--filter-envs', config.filterEnvs.length > 0 ? config.filterEnvs.join(',') : 'none'],
        ...(config.filterParserReasons ? ['--filter-parser-reasons'] : []),
        ...['--annotation', config.annotation],
        ...player.flags,
      ];
      const report = await generateInShards(args, config.generators, ctx.brokers);
      summaries.push(dataStageSummary(kafka, part, player.describe, report));
    }
    return summaries;
  });
  // a run started before the stage played several prompt modes kept one summary, not a list
  return played.then((kept: DataStageSummary[] | DataStageSummary) => [kept].flat());
}

/**
 * The SFT data's episodes in `prompts`: `sftGroups` × `sftGroupSize` per batch, `sftBatches`
 * batches, each prompt mode on the puzzles after the previous one's.
 */
function sftEpisodes({ config, runId }: LoopContext, prompts: PromptMode, index: number): EpisodeConfig {
  const puzzles = config.sftGroups * config.sftBatches;
  return episodeConfig({
    env: config.env,
    runId: index === 0 ? `${runId}-sft` : `${runId}-sft-${prompts}`,
    mode: prompts,
    groups: config.sftGroups,
    groupSize: config.sftGroupSize,
    batches: config.sftBatches,
    seedBase: 10_000 + index * puzzles,
  });
}
