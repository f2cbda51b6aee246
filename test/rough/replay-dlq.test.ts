/**
 * Issue 44 item 4: `spa replay --run <id>` dead-letters its rejects into a topic of the replay, so
 * the run's own DLQ keeps the run's rejects alone (a replay had doubled it, 81 → 162).
 * test/rough/topics-run.slow.test.ts checks the replay writes there.
 */
import { describe, expect, it } from 'vitest';
import { runReplayDlqTopic, runReplayTopic, runTopicNames } from '../../cli/run-topics.js';

describe("a run replay's dead-letter topic", () => {
  it('is named after the replay, beside its SFT topic, and is not the run DLQ', () => {
    expect(runReplayDlqTopic('run-1', 'self-belief', false)).toBe('spa.run-1.replay-self-belief.dlq');
    expect(runReplayDlqTopic('run-1', 'gt', true)).toBe('spa.run-1.replay-gt-masked.dlq');
    expect(runReplayTopic('run-1', 'gt', true)).toBe('spa.run-1.replay-gt-masked.sft');
    expect(runReplayDlqTopic('run-1', 'gt', false)).not.toBe(runTopicNames('run-1').dlq);
  });
});
