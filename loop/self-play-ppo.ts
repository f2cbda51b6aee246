/**
 * Stage 3, self-play + PPO (docs/spa-ppo.md): the run's generator processes play with
 * `--policy latest` into spa.<run>.rollouts while the PPO service trains on them and publishes
 * v2, v3, …, which the generators swap to between batches (docs/spa-schedule.md).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { OutboundTopic } from '../schemas/outbound.js';
import { episodeConfig, type EpisodeConfig } from '../streams/episodes/episode-config.js';
import { committedCounts } from '../streams/kafka/committed-counts.js';
import type { LoopContext } from './context.js';
import { policyFolder } from './export-policy.js';
import { onnxPolicyFlags } from './generation.js';
import { generateFlags, generateInShards, generatorProcesses } from './generator-shards.js';
import { log } from './log.js';
import { readPpoProgress, readTrainerJson } from './trainer-files.js';
import { startPpoService } from './trainers.js';
import { typedCommand } from './typed-command.js';

/** SPA's first training seed; PPO batch b plays seeds from here + b × groups. */
export const PPO_SEED_BASE = 10_000;

/** What self-play + PPO leaves: its records and versions in the topics, and every published policy. */
export interface SelfPlayResult {
  readonly selfPlay: Record<OutboundTopic, number>;
  /** Policy version → batches whose committed rollouts carry it (streams/kafka/committed-counts.ts). */
  readonly generatorVersions: Record<string, number>;
  /** Published policy version → its artifact folder, the PPO start's to the final one. */
  readonly artifacts: ReadonlyMap<number, string>;
  readonly finalVersion: number;
}

/** The PPO service's steps done and its published version (`<out>/progress.json`), if it has started. */
type PpoResume = { step: number; version: number } | undefined;

/**
 * The stage `self-play + ppo` from `startModel`. A resumed run's trainer continues from its
 * checkpoint, so the generators play only the remaining steps' batches, on the puzzles those
 * steps would have had, admitted as those steps' batches.
 */
export function selfPlayAndPpo(ctx: LoopContext, startModel: string): Promise<SelfPlayResult> {
  return ctx.timed('self-play + ppo', async () => {
    const { config, runDir } = ctx;
    const resumed = ppoProgress(join(runDir, 'ppo'));
    const done = resumed?.step ?? 0;
    if (done >= config.ppoSteps)
      throw new Error(
        `PPO finished all ${config.ppoSteps} steps in an earlier attempt of this run; its policies are in ` +
          `${join(runDir, 'policies')}: evaluate them with ${typedCommand(['eval', '--policy'])} onnx:<folder>, or start a new --run-id`,
      );
    const trainer = startPpoService(ctx, startModel);
    const stopGenerators = new AbortController();
    try {
      if (done > 0) log(`self-play + ppo: resuming after PPO step ${done} of ${config.ppoSteps}`);
      log(`self-play: ${generatorProcesses(config.generators)} (spa generate --shard)`);
      // a trainer that fails stops the stage at once, not after the generators' wait for a policy
      await Promise.all([
        generateInShards(selfPlayFlags(ctx, resumed), config.generators, ctx.brokers, stopGenerators.signal),
        trainer.done,
      ]);
      // The trainer's last export is the final policy.
      const finalVersion = readPpoProgress(join(runDir, 'ppo')).version;
      const artifacts = publishedPolicies(join(runDir, 'policies'), finalVersion);
      return { ...(await selfPlayCounts(ctx)), artifacts, finalVersion };
    } catch (error) {
      trainer.kill();
      stopGenerators.abort();
      throw error;
    }
  });
}

/**
 * What self-play left in the run's topics over every attempt (a killed one's committed records
 * too; its open transaction is aborted): its records by topic, their keys under the PPO episodes'
 * run ids (`<run>-rl`, `<run>-rl-from<step>` after a resume), and the batches each policy version
 * played, from the rollouts' headers. Counted from Kafka, not from this attempt's generators.
 */
async function selfPlayCounts(ctx: LoopContext): Promise<Omit<SelfPlayResult, 'artifacts' | 'finalVersion'>> {
  const keys = new RegExp(`^${ctx.runId.replace(/[.]/g, '\\.')}-rl(-from\\d+)?/`);
  const selfPlay = { trajectories: 0, sft: 0, rollouts: 0, dlq: 0 };
  let generatorVersions: Record<string, number> = {};
  for (const topic of Object.keys(selfPlay) as OutboundTopic[]) {
    const counts = await committedCounts(ctx.kafka, ctx.kafka.topics[topic], keys);
    selfPlay[topic] = counts.records;
    if (topic === 'rollouts') generatorVersions = counts.batchesByVersion;
  }
  return { selfPlay, generatorVersions };
}

/**
 * The `spa generate` flags of the PPO self-play: the remaining steps' episodes, each process
 * following the run's policy topic as the trainer's schedule admits (`--max-staleness`,
 * `--export-every`, and where a resumed trainer stands, `--resumed-at`).
 */
export function selfPlayFlags(ctx: LoopContext, resumed: PpoResume): string[] {
  const { config } = ctx;
  return [
    ...generateFlags(ppoEpisodes(ctx, resumed?.step ?? 0), 'rollouts', ctx.kafka.topics),
    ...onnxPolicyFlags(config, 'latest', 1),
    ...['--max-staleness', String(config.maxStaleness), '--export-every', String(config.exportEvery)],
    ...(resumed && resumed.step > 0 ? ['--resumed-at', `${resumed.step}:${resumed.version}`] : []),
  ];
}

/** PPO's episodes from step `done` on: its own run id after a resume, the seeds those steps play. */
function ppoEpisodes({ config, runId }: LoopContext, done: number): EpisodeConfig {
  return episodeConfig({
    env: config.env,
    runId: `${runId}-rl${done > 0 ? `-from${done}` : ''}`,
    mode: 'base',
    groups: config.ppoGroupsPerStep,
    groupSize: config.ppoGroupSize,
    batches: config.ppoSteps - done,
    seedBase: PPO_SEED_BASE + done * config.ppoGroupsPerStep,
  });
}

/** The PPO service's progress in `outDir`, if it has started. */
function ppoProgress(outDir: string): PpoResume {
  const path = join(outDir, 'progress.json');
  if (!existsSync(path)) return undefined;
  const { step, version } = readTrainerJson(path);
  return typeof step === 'number' && typeof version === 'number' ? { step, version } : undefined;
}

/**
 * The policy versions published on the run's policy topic, by folder: every version under `root`
 * from v1 (world-model SFT's, or the start model's without it) to `finalVersion`. Exports are
 * atomic (a version's folder appears whole) and each published version is exported there first;
 * v0, self-play's data policy, is never published.
 */
function publishedPolicies(root: string, finalVersion: number): Map<number, string> {
  const versions = readdirSync(root)
    .filter((name) => /^v\d{6}$/.test(name))
    .map((name) => Number(name.slice(1)))
    .filter((v) => v >= 1 && v <= finalVersion)
    .sort((a, b) => a - b);
  return new Map(versions.map((v) => [v, policyFolder(root, v)]));
}
