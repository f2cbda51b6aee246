/**
 * Issue 36 item 2: `spa tap`, `spa topics` and `spa replay` find a run's topics (`spa.<run>.*`, as
 * `spa run` names them) and the newest run through cli/run-topics.ts.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  newestRun,
  pickRun,
  runIdArgument,
  runIdsIn,
  runReplayTopic,
  runTopic,
  runTopicNames,
  topicsOfRun,
} from '../../cli/run-topics.js';

/** What a broker holds after two `spa run`s (one with a warm-up) and a replay of the first. */
const broker = [
  '__consumer_offsets',
  'spa.trajectories',
  'spa.sft',
  'spa.rollouts',
  'spa.dlq',
  'spa.policy',
  ...Object.values(runTopicNames('run-20261127050000')),
  'spa.run-20261127050000.replay-none.sft',
  ...Object.values(runTopicNames('run-20261127061500')),
  'spa.run-20261127061500.warmup.trajectories',
  'spa.run-20261127061500.warmup.sft',
  'replayed-sft',
];

describe('run topics', () => {
  it("names a run's topics as `spa run` does: spa.<run>.<role>", () => {
    expect(runTopicNames('run-1')).toEqual({
      trajectories: 'spa.run-1.trajectories',
      sft: 'spa.run-1.sft',
      rollouts: 'spa.run-1.rollouts',
      dlq: 'spa.run-1.dlq',
      policy: 'spa.run-1.policy',
    });
    expect(runReplayTopic('run-1', 'gt', false)).toBe('spa.run-1.replay-gt.sft');
    expect(runReplayTopic('run-1', 'none', true)).toBe('spa.run-1.replay-none-masked.sft');
  });

  it('finds the runs on a broker: not the default topics, not a warm-up or replay as a run of its own', () => {
    expect(runIdsIn(broker)).toEqual(['run-20261127050000', 'run-20261127061500']);
  });

  it("lists a run's topics, main ones in role order, then its warm-up and replays", () => {
    expect(topicsOfRun(broker, 'run-20261127061500')).toEqual([
      'spa.run-20261127061500.trajectories',
      'spa.run-20261127061500.sft',
      'spa.run-20261127061500.rollouts',
      'spa.run-20261127061500.dlq',
      'spa.run-20261127061500.policy',
      'spa.run-20261127061500.warmup.sft',
      'spa.run-20261127061500.warmup.trajectories',
    ]);
    expect(topicsOfRun(broker, 'run-2026112705')).toEqual([]);
  });

  it('the newest run: the run folder changed last, else the latest id', () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'spa-runs-'));
    const ids = runIdsIn(broker);
    // No folders here (another --runs-dir): run-<timestamp> ids sort by time.
    expect(newestRun(ids, runsDir)).toBe('run-20261127061500');
    // The older id was resumed a minute ago: its folder changed last.
    for (const [id, secondsAgo] of [
      ['run-20261127050000', 60],
      ['run-20261127061500', 3600],
    ] as const) {
      mkdirSync(join(runsDir, id));
      const at = new Date(Date.now() - secondsAgo * 1000);
      utimesSync(join(runsDir, id), at, at);
    }
    expect(newestRun(ids, runsDir)).toBe('run-20261127050000');
    expect(newestRun([], runsDir)).toBeUndefined();
    rmSync(runsDir, { recursive: true });
  });

  it('picks a run by id or `last`; an unknown one is a usage error naming the runs there are', () => {
    expect(pickRun(broker, 'last', '/nonexistent').runId).toBe('run-20261127061500');
    expect(pickRun(broker, 'run-20261127050000', '/nonexistent').topics).toContain(
      'spa.run-20261127050000.replay-none.sft',
    );
    const unknown = (() => {
      try {
        pickRun(broker, 'run-9', '/nonexistent');
      } catch (error) {
        return error as Error & { exitCode?: number };
      }
    })();
    expect(unknown?.exitCode).toBe(2);
    expect(unknown?.message).toBe(
      '--run run-9: no topics spa.run-9.* on the broker; runs on the broker: run-20261127050000, run-20261127061500',
    );
    expect(() => pickRun(['spa.trajectories'], 'last', '/nonexistent')).toThrow(
      "--run last: no run's topics (spa.<run>.*) on the broker",
    );
  });

  it("reads a topic relative to the run, and refuses one that is not the run's", () => {
    const run = pickRun(broker, 'run-20261127061500', '/nonexistent');
    expect(runTopic(run, 'trajectories', '<topic>')).toBe('spa.run-20261127061500.trajectories');
    expect(runTopic(run, 'warmup.sft', '--topic')).toBe('spa.run-20261127061500.warmup.sft');
    expect(runTopic(run, 'spa.run-20261127061500.dlq', '--topic')).toBe('spa.run-20261127061500.dlq');
    expect(() => runTopic(run, 'spa.trajectories', '--topic')).toThrow(
      '--topic "spa.trajectories" is not a topic of run run-20261127061500; its topics: trajectories, sft, rollouts, dlq, policy, warmup.sft, warmup.trajectories',
    );
  });

  it('takes run ids that can be part of a topic name', () => {
    expect(runIdArgument('run-20261127061500')).toBe('run-20261127061500');
    expect(runIdArgument('last')).toBe('last');
    for (const bad of ['', 'a/b', 'run 1', '.hidden', 'x'.repeat(201)])
      expect(() => runIdArgument(bad), bad).toThrow('a run id is 1..200 letters');
  });
});
