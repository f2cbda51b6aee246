/**
 * Which stage of a `spa run` played a trajectory, from the run id its group id starts with
 * (`<run>/<split>/b<batch>/g<group>`): the loop names each stage's episodes `<run>-warmup-<mode>`
 * (loop/warmup.ts), `<run>-sft` (loop/sft-data.ts) and `<run>-rl[-from<n>]` (loop/self-play-ppo.ts).
 * The web tap shows each stage's success rate on its own row: the warm-up's oracle
 * demonstrations succeed nearly always, and one rate over them and the model's episodes says nothing.
 */

/** The stage label of a trajectory; other producers' (`spa generate`) by their prompt mode. */
export function runStage(trajectory: { group_id: string; policy: string; mode: string }): string {
  const run = trajectory.group_id.split('/')[0] ?? '';
  if (/-warmup-[^/]*$/.test(run)) return 'warm-up';
  if (/-rl(-from\d+)?$/.test(run)) return 'PPO';
  if (/-sft$/.test(run))
    return trajectory.policy.startsWith('onnx') ? 'self-play' : `SFT data (${trajectory.policy})`;
  return `${trajectory.mode} prompts`;
}
