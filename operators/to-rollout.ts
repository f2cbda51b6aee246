import { map, type OperatorFunction } from 'rxjs';
import type { Rollout, Trajectory } from '../schemas/index.js';

/**
 * A played trajectory as a PPO rollout (docs/spa-ppo.md#sequence): the whole conversation, per-turn
 * rewards, format penalties and the terminal score Σ turn rewards + penalty, stamped with the
 * policy version that sampled it (the trainer's staleness bound reads it).
 */
export function toRollout(): OperatorFunction<Trajectory, Rollout> {
  return map((trajectory) => {
    const turnRewards = trajectory.turns.map((turn) => turn.rewards.reduce((acc, r) => acc + r, 0));
    const total = turnRewards.reduce((acc, r) => acc + r, 0);
    return {
      trajectory_id: trajectory.trajectory_id,
      group_id: trajectory.group_id,
      env: trajectory.env,
      seed: trajectory.seed,
      policy_version: trajectory.policy_version,
      messages: trajectory.messages,
      turn_rewards: turnRewards,
      penalty: trajectory.penalty,
      score: total + trajectory.penalty,
      success: trajectory.success,
      num_turns: trajectory.turns.length,
      created_at: trajectory.created_at,
    };
  });
}
