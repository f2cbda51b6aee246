/**
 * The tiny model's format warm-up (docs/spa-loop.md#warm-up): SFT on oracle demonstrations, so that
 * v0 can write `<observation>…<prediction>…<answer>` turns for the world-model prompts and
 * `<think>…</think><answer>` turns for the PPO prompts at all.
 */
import { join } from 'node:path';
import { envFactory } from '../envs/registry.js';
import { builtinPolicy } from '../policies/builtin.js';
import { episodeConfig } from '../streams/episodes/episode-config.js';
import { generateToKafka } from '../streams/generator-sinks.js';
import { connectSpaKafka, type SpaKafka } from '../streams/kafka/spa-kafka.js';
import { WARMUP_MODES, warmupModeParts, type LoopConfig, type WarmupMode } from './configs.js';
import type { LoopContext } from './context.js';
import { dataStageSummary, purgeDataTopics, type DataStageSummary } from './data-stage.js';
import { trajectoryProgress } from './progress.js';
import { readSftMetrics, type SftMetricsFile } from './trainer-files.js';
import { runSft } from './trainers.js';

/** The warm-up's result: its data stages, the warmed-up model and its held-out metrics. */
export interface Warmup {
  readonly data: DataStageSummary[];
  /** The warmed-up run folder, or the configured model without a warm-up. */
  readonly model: string;
  readonly metrics: SftMetricsFile | null;
}

/**
 * Held-out rows an SFT stage scores for next-state exact match: enough that the summary's
 * standard error (binomial, ≤ 0.05 at 96 rows) tells a learned world model from none.
 */
export const SFT_EXACT_MATCH_ROWS = 96;

/**
 * Warm-up puzzles come from their own seed range (50000 on; self-play and PPO play 10000 on), so
 * self-play never replays a demonstrated puzzle; each kind of demonstration gets its own stretch.
 */
const WARMUP_SEED_BASE = 50_000;

/** Each warm-up seed (`LoopConfig.warmupSeed`) gets its own million puzzle seeds. */
const WARMUP_SEED_STRIDE = 1_000_000;

/**
 * The stages `warm-up data` and `warm-up sft`: oracle demonstrations on the warm-up's own topics
 * (`spa.<run>.warmup.*`, puzzles disjoint from the self-play ones) in each of `warmupModes`, then
 * SFT of the configured model on them. Without warm-up (`warmupTrajectories` 0): nothing, and the
 * configured model.
 */
export async function formatWarmup(ctx: LoopContext): Promise<Warmup> {
  const { config, runId } = ctx;
  if (config.warmupTrajectories <= 0) return { data: [], model: config.model, metrics: null };
  const warm = await connectSpaKafka({
    clientId: 'spa-run-warmup',
    topics: { prefix: `spa.${runId}.warmup.` },
  });
  try {
    // Both modes share the warm-up topics: one stage, so a redo purges and regenerates both.
    const data = await ctx.timed('warm-up data', async ({ redo }) => {
      if (redo) await purgeDataTopics(warm, 'warm-up data');
      const stages: DataStageSummary[] = [];
      for (const [index, mode] of config.warmupModes.entries())
        stages.push(await demonstrations(ctx, warm, mode, index));
      return stages;
    });
    const out = join(ctx.runDir, 'warmup');
    await ctx.timed('warm-up sft', () =>
      runSft(ctx, 'warm-up', {
        model: config.model,
        topic: warm.topics.sft,
        epochs: config.warmupEpochs,
        lr: config.warmupLr,
        batchSize: config.warmupBatchSize,
        decisionWeight: config.decisionWeight,
        out,
        // a few hundred held-out puzzles score the warm-up; the rest are trained on
        valFraction: warmupValFraction(config),
        evalRows: SFT_EXACT_MATCH_ROWS,
        seed: config.warmupSeed,
      }),
    );
    return { data, model: out, metrics: readSftMetrics(out) };
  } finally {
    await warm.close();
  }
}

/**
 * The oracle's demonstrations of one warm-up kind, played in this process (prompts in one mode,
 * answers maybe in another, which `spa generate` does not do) into the warm-up topics.
 */
async function demonstrations(
  ctx: LoopContext,
  warm: SpaKafka,
  mode: WarmupMode,
  index: number,
): Promise<DataStageSummary> {
  const { config, runId } = ctx;
  const stage = `warm-up data (oracle, ${mode})`;
  const { prompt, response } = warmupModeParts(mode);
  const episodes = episodeConfig({
    env: config.env,
    runId: `${runId}-warmup-${mode}`,
    mode: prompt,
    groups: config.warmupTrajectories,
    groupSize: 1,
    batches: 1,
    // each kind its own stretch of puzzles, disjoint from the others'
    seedBase: WARMUP_SEED_BASE + config.warmupSeed * WARMUP_SEED_STRIDE + index * config.warmupTrajectories,
  });
  const policy = builtinPolicy('oracle', {
    mode: response,
    seed: config.warmupSeed * WARMUP_MODES.length + index,
    actionsPerTurn: config.warmupActionsPerTurn,
    exploreRate: config.warmupExploreModes.includes(mode) ? config.warmupExplore : 0,
    states: config.warmupStates,
  });
  const progress = trajectoryProgress(stage, episodes);
  const rejectsByReason: Record<string, number> = {};
  let counts;
  try {
    counts = await generateToKafka(warm, `spa-run-${runId}-warmup-${mode}`, {
      episodes,
      makeEnv: envFactory({ name: episodes.env }),
      policy,
      pipeline: {
        target: 'sft',
        malformedFilter: { envs: config.filterEnvs, parserReasons: config.filterParserReasons },
        // empty state tags stay empty: the demonstrations teach the format, not the states
        annotation: config.warmupStates === 'empty' ? 'self-belief' : 'gt',
      },
      onRecord: (o) => {
        progress.add(o.topic);
        if (o.topic === 'dlq') rejectsByReason[o.record.reason] = (rejectsByReason[o.record.reason] ?? 0) + 1;
      },
    });
  } finally {
    progress.done(); // its heartbeat stops with the stage, however the stage ends
  }
  return dataStageSummary(warm, stage, { name: 'oracle', version: null }, { counts, rejectsByReason });
}

/** The warm-up's held-out share: about 128 puzzles (at most SFT's usual fifth), enough to score it. */
function warmupValFraction(config: LoopConfig): number {
  const puzzles = config.warmupTrajectories * config.warmupModes.length;
  return Math.min(0.2, 128 / puzzles);
}
