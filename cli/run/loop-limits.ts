/**
 * The limits of a `spa run` config that follow from several fields together, checked before the
 * loop starts: the SFT data's and PPO's batches of episodes and their puzzle seeds
 * (checkEpisodeLimits), and the evaluation's episodes (checkEvalLimits). The episode configs
 * mirror those loop/sft-data.ts and loop/self-play-ppo.ts play; the warm-up's (group size 1, seeds from 50000) stay within its
 * fields' own ranges.
 */
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { checkEpisodeLimits, checkEvalLimits } from '../options.js';
import type { LoopConfig } from '../../loop/configs.js';
import { PPO_SEED_BASE } from '../../loop/self-play-ppo.js';

/** Throws a UsageError naming the fields when a stage of `config` would leave its limits. */
export function checkLoopLimits(config: LoopConfig): void {
  const { env } = config;
  checkEpisodeLimits(
    episodeConfig({
      env,
      groups: config.sftGroups,
      groupSize: config.sftGroupSize,
      batches: config.sftBatches,
    }),
    { groups: '--sft-groups', groupSize: '--sft-group-size', batches: '--sft-batches' },
  );
  checkEpisodeLimits(
    episodeConfig({
      env,
      groups: config.ppoGroupsPerStep,
      groupSize: config.ppoGroupSize,
      batches: config.ppoSteps,
      seedBase: PPO_SEED_BASE,
    }),
    { groups: '--ppo-groups-per-step', groupSize: '--ppo-group-size', batches: '--ppo-steps' },
  );
  checkEvalLimits(
    { puzzles: config.evalPuzzles, k: config.evalK, passes: config.evalPasses },
    { puzzles: '--eval-puzzles', k: '--eval-k', passes: '--eval-passes' },
  );
}
