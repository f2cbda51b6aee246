/**
 * Issue 44 item 4: the web tap's table mixed the warm-up's oracle episodes, self-play and PPO
 * rollouts in one success rate, unlabelled. Each stage of a run now has its own row and rate.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runStage } from '../../web/server/run-stage.js';
import { TapStats } from '../../web/server/tap-stats.js';

/** A trajectory of `spa run --run-id r1`'s stage whose episode run id is `episodes`. */
const played = (episodes: string, policy: string, mode: 'wm' | 'base', g = 0) => ({
  group_id: `${episodes}/train/b0/g${g}`,
  policy,
  mode,
});

describe("the web tap's stages", () => {
  it("names each stage of a run from its episodes' run id", () => {
    expect(runStage(played('r1-warmup-wm', 'oracle', 'wm'))).toBe('warm-up');
    expect(runStage(played('r1-sft', 'onnx:v0', 'wm'))).toBe('self-play');
    expect(runStage(played('r1-sft', 'oracle', 'wm'))).toBe('SFT data (oracle)');
    expect(runStage(played('r1-rl', 'onnx:v1', 'base'))).toBe('PPO');
    expect(runStage(played('r1-rl-from4', 'onnx:v3', 'base'))).toBe('PPO');
    expect(runStage(played('gen-20261127', 'random', 'wm'))).toBe('wm prompts');
  });

  it('shows each stage’s success rate on its own row, in the order the stages run', () => {
    const stats = new TapStats();
    const add = (episodes: string, policy: string, mode: 'wm' | 'base', successes: boolean[]) =>
      successes.forEach((success, i) => {
        const t = played(episodes, policy, mode, i);
        stats.episode('sokoban', t.group_id, success, runStage(t));
      });
    add('r1-rl', 'onnx:v1', 'base', [false, false, false, true]);
    add('r1-warmup-wm', 'oracle', 'wm', [true, true, true, true]);
    add('r1-sft', 'onnx:v0', 'wm', [true, false, false, false]);
    expect(stats.snapshot().envs.map((e) => [e.stage, e.successRate])).toEqual([
      ['warm-up', 1],
      ['self-play', 0.25],
      ['PPO', 0.25],
    ]);
  });

  it('the page has a stage column', () => {
    expect(readFileSync('web/index.html', 'utf8')).toMatch(/<th[^>]*>\s*stage\s*<\/th>/);
    expect(readFileSync('web/app.js', 'utf8')).toContain("el('td', '', v(e.stage))");
  });
});
