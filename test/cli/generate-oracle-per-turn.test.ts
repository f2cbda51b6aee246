import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Trajectory } from '../../schemas/index.js';

/**
 * `spa generate --oracle-actions-per-turn n` (the learning check's one-action transitions): the
 * oracle writes at most n plan actions per turn, still solves every puzzle, and its prediction
 * is the state after exactly those actions. Any other policy is refused with a clear error.
 */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

function generate(args: readonly string[]) {
  return spawnSync(process.execPath, ['bin/spa.mjs', 'generate', '--env', 'sokoban', ...args], {
    cwd: repoRoot,
    encoding: 'utf8',
  });
}

function trajectories(perTurn: number, extra: readonly string[] = []): Trajectory[] {
  const out = join(mkdtempSync(join(tmpdir(), 'spa-oracle-per-turn-')), 'rows.jsonl');
  const run = generate([
    ...['--policy', 'oracle', '--oracle-actions-per-turn', String(perTurn), ...extra],
    ...['--groups', '6', '--group-size', '1', '--batches', '1', '--seed-base', '10000', '--out', out],
  ]);
  expect(run.status, run.stderr).toBe(0);
  return readFileSync(out.replace(/\.jsonl$/, '.trajectories.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Trajectory);
}

const prediction = (response: string) => /<prediction>([\s\S]*?)<\/prediction>/.exec(response)?.[1];

describe('spa generate --oracle-actions-per-turn', () => {
  it('plays one action per turn, predicts the state after it, and still solves', () => {
    const one = trajectories(1);
    const five = trajectories(5);
    expect(one).toHaveLength(6);
    const fiveBySeed = new Map(five.map((t) => [t.seed, t]));
    let solved = 0;
    for (const t of one) {
      // The same shortest plan cut into one-action turns: it solves whatever fits the turn cap.
      const whole = fiveBySeed.get(t.seed)!;
      if (whole.success && whole.num_actions <= t.turns.length) {
        expect(t.success).toBe(true);
        expect(t.num_actions).toBe(whole.num_actions);
        solved += 1;
      }
      for (const turn of t.turns) {
        expect(turn.executed).toHaveLength(1);
        expect(prediction(turn.response_raw)).toBe(turn.state_after);
      }
    }
    expect(solved).toBeGreaterThan(0);
    expect(five.some((t) => t.turns.some((turn) => turn.executed.length > 1))).toBe(true);
  });

  it('--oracle-explore: names each action before <prediction>, random ones included, seeded', () => {
    const planned = trajectories(1);
    const explored = trajectories(1, ['--oracle-explore', '1', '--policy-seed', '7']);
    const turns = explored.flatMap((t) => t.turns);
    for (const turn of turns) {
      const [action] = turn.executed;
      expect(turn.response_raw).toContain(`Action: ${action}.`);
      expect(turn.response_raw.indexOf('Action:')).toBeLessThan(turn.response_raw.indexOf('<prediction>'));
      expect(prediction(turn.response_raw)).toBe(turn.state_after);
    }
    // All random: several directions, and no longer the planner's episodes.
    expect(new Set(turns.map((turn) => turn.executed[0])).size).toBeGreaterThan(2);
    const plannedActions = planned.map((t) => t.turns.map((turn) => turn.executed[0]).join());
    expect(explored.map((t) => t.turns.map((turn) => turn.executed[0]).join())).not.toEqual(plannedActions);
    const again = trajectories(1, ['--oracle-explore', '1', '--policy-seed', '7']);
    expect(again.map((t) => t.turns.map((turn) => turn.response_raw))).toEqual(
      explored.map((t) => t.turns.map((turn) => turn.response_raw)),
    );
  });

  it('refuses --oracle-explore without one action per turn, and a rate outside 0..1', () => {
    const many = generate(['--policy', 'oracle', '--oracle-explore', '0.5', '--out', '/dev/null']);
    expect(many.status).not.toBe(0);
    expect(many.stderr).toContain('--oracle-explore needs --oracle-actions-per-turn 1');
    const bad = generate(['--policy', 'oracle', '--oracle-actions-per-turn', '1', '--oracle-explore', '1.5']);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('--oracle-explore must be a probability between 0 and 1, got "1.5"');
  });

  it('refuses the deterministic oracle with more than one member per group; exploring members differ', () => {
    const copies = generate(['--policy', 'oracle', '--group-size', '2', '--out', '/dev/null']);
    expect(copies.status).not.toBe(0);
    expect(copies.stderr).toContain('--policy oracle with --group-size 2: the oracle is deterministic');
    const out = join(mkdtempSync(join(tmpdir(), 'spa-oracle-group-')), 'rows.jsonl');
    const explored = generate([
      ...['--policy', 'oracle', '--oracle-actions-per-turn', '1', '--oracle-explore', '0.5'],
      ...['--groups', '2', '--group-size', '4', '--batches', '1', '--out', out],
    ]);
    expect(explored.status, explored.stderr).toBe(0);
    const members = readFileSync(out.replace(/\.jsonl$/, '.trajectories.jsonl'), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as Trajectory);
    for (const group of new Set(members.map((t) => t.group_id))) {
      const texts = members.filter((t) => t.group_id === group).map((t) => JSON.stringify(t.messages));
      expect(texts).toHaveLength(4);
      expect(new Set(texts).size).toBeGreaterThan(1);
    }
  });

  it('refuses a policy other than the oracle, naming both options', () => {
    const run = generate(['--policy', 'random', '--oracle-actions-per-turn', '1', '--out', '/dev/null']);
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain('--oracle-actions-per-turn 1 needs --policy oracle, got --policy random');
  });
});
