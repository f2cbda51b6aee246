import { lastValueFrom, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { envFactory, type PuzzleSource } from '../../envs/registry.js';
import type { EnvName } from '../../envs/types.js';
import type { Rollout, SftRow, Trajectory } from '../../schemas/index.js';
import type { Outbound } from '../../schemas/outbound.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { generatorPipeline } from '../../streams/generator-pipeline.js';
import { builtinPolicy, type BuiltinPolicyName } from '../../policies/builtin.js';

async function generate(
  env: EnvName,
  policy: BuiltinPolicyName,
  puzzles: PuzzleSource,
  target: 'sft' | 'rollouts' = 'sft',
) {
  const mode = target === 'sft' ? 'wm' : 'base';
  const config = episodeConfig({ env, groups: 6, groupSize: 2, batches: 2, puzzles, mode, runId: 't' });
  const out = await lastValueFrom(
    generatorPipeline(config, envFactory({ name: env, puzzles }), builtinPolicy(policy, { mode, seed: 3 }), {
      target,
    }).pipe(toArray()),
  );
  const of = <T extends Outbound['topic']>(topic: T) =>
    out.filter((o) => o.topic === topic).map((o) => o.record) as Extract<Outbound, { topic: T }>['record'][];
  return {
    trajectories: of('trajectories') as Trajectory[],
    sft: of('sft') as SftRow[],
    rollouts: of('rollouts') as Rollout[],
    dlq: of('dlq'),
  };
}

const observationOf = (text: string) => /<observation>(.*?)<\/observation>/s.exec(text)?.[1];
const predictionOf = (text: string) => /<prediction>(.*?)<\/prediction>/s.exec(text)?.[1];
/** The state block of the last user message: between "State:\n" and "\nYou have N actions left." */
const shownState = (row: SftRow) => {
  const user = row.prompt[row.prompt.length - 1]!.content;
  return /State:\n(.*)\nYou have \d+ actions left\./s.exec(user.slice(user.lastIndexOf('\nTurn ')))?.[1];
};

describe.each<[EnvName, BuiltinPolicyName, PuzzleSource]>([
  ['sokoban', 'random', 'spa'],
  ['sokoban', 'oracle', 'generated'],
  ['frozenlake', 'random', 'generated'],
  ['frozenlake', 'oracle', 'spa'],
  ['sudoku', 'random', 'spa'],
  ['sudoku', 'oracle', 'generated'],
])('%s × %s policy on %s puzzles', (env, policy, puzzles) => {
  it('satisfies the ground-truth invariants (docs/spa-data.md#replacement)', async () => {
    const { trajectories, sft, dlq } = await generate(env, policy, puzzles);
    expect(trajectories).toHaveLength(24);
    expect(sft.length + dlq.length).toBeGreaterThan(0);
    const byTrajectory = new Map<string, SftRow[]>();
    for (const row of sft)
      byTrajectory.set(row.trajectory_id, [...(byTrajectory.get(row.trajectory_id) ?? []), row]);
    for (const [id, rows] of byTrajectory) {
      const trajectory = trajectories.find((t) => t.trajectory_id === id)!;
      expect(rows.map((r) => r.turn)).toEqual(trajectory.turns.map((_, i) => i));
      rows.forEach((row, t) => {
        expect(row.data_source).toBe(env);
        // observation of turn t = the state shown in turn t's user message
        expect(observationOf(row.response)).toBe(shownState(row));
        // prediction of turn t = observation of turn t+1, or the final state
        const next = rows[t + 1];
        expect(predictionOf(row.response)).toBe(
          next ? observationOf(next.response) : trajectory.states.at(-1),
        );
        // later prompts carry the annotated earlier turns
        if (next) expect(next.prompt[next.prompt.length - 2]!.content).toBe(row.response);
      });
    }
  });
});

describe('rollouts target', () => {
  it('plays base-mode prompts and scores Σ turn rewards + penalty', async () => {
    const { rollouts, sft, trajectories } = await generate('sokoban', 'random', 'spa', 'rollouts');
    expect(sft).toHaveLength(0);
    expect(rollouts).toHaveLength(trajectories.length);
    for (const rollout of rollouts) {
      expect(rollout.messages[1]!.content).toContain(
        'Always output: <think> [Your thoughts] </think> <answer> [your answer] </answer>',
      );
      expect(rollout.messages.at(-1)!.role).toBe('assistant');
      const sum = rollout.turn_rewards.reduce((a, r) => a + r, 0);
      expect(rollout.score).toBe(sum + rollout.penalty);
      expect(rollout.num_turns).toBe(rollout.turn_rewards.length);
    }
  });

  it('oracle solves every SPA Sokoban val puzzle it plays', async () => {
    const { trajectories } = await generate('sokoban', 'oracle', 'spa', 'rollouts');
    expect(trajectories.every((t) => t.success)).toBe(true);
  });
});
