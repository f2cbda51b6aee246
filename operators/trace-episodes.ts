import { Observable, type MonoTypeOperatorFunction } from 'rxjs';
import type { StepRecord } from '../streams/episodes/types.js';
import { episodeTraces, startEpisodeSpan, type EpisodeSpan } from '../streams/telemetry/episode-spans.js';
import { telemetryActive } from '../streams/telemetry/telemetry.js';

/**
 * Opens an `episode` span per trajectory and a `turn N` child per StepRecord, from the episode
 * stream alone, passing every record through unchanged. Place it right after `episodes(…)`,
 * before `toTrajectory`, so every later stage and the Kafka sink find the episode's context.
 *
 * Timing as seen from the stream: the episode span opens when its first turn arrives and ends
 * with its `final` turn; a turn span covers the time since the episode's previous record (the
 * batch's policy call plus the env steps). The hook inside the episode loop
 * (`startEpisodeSpan` in `runBatch`) times turns exactly; use one or the other, not both.
 *
 * Open episodes are held in a map bounded by the slots in flight (one batch at a time,
 * streams/episodes), and are ended as failed when the stream errors or is unsubscribed.
 */
export function traceEpisodes(): MonoTypeOperatorFunction<StepRecord> {
  return (source) =>
    new Observable<StepRecord>((subscriber) => {
      if (!telemetryActive()) return source.subscribe(subscriber);
      const open = new Map<string, { episode: EpisodeSpan; last: number; steps: number }>();
      // A new episode's first turn began when the stream last emitted (the batch's policy call came after it).
      let lastEmitted = performance.now();
      const subscription = source.subscribe({
        next(record) {
          let entry = open.get(record.trajectoryId);
          if (entry === undefined) {
            const episode = startEpisodeSpan(
              {
                trajectoryId: record.trajectoryId,
                groupId: record.groupId,
                env: record.env,
                seed: record.seed,
                split: record.split,
                policy: record.policy,
                policyVersion: record.policyVersion,
              },
              episodeTraces,
              lastEmitted,
            );
            entry = { episode, last: lastEmitted, steps: 0 };
            open.set(record.trajectoryId, entry);
          }
          entry.episode.recordTurn(record.turn, entry.last);
          entry.steps += record.executed.length;
          entry.last = lastEmitted = performance.now();
          if (record.final) {
            open.delete(record.trajectoryId);
            entry.episode.end({ success: record.success, turns: record.turn, envSteps: entry.steps });
          }
          subscriber.next(record);
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
      return () => {
        subscription.unsubscribe();
        for (const { episode } of open.values()) episode.end({ success: false });
        open.clear();
      };
    });
}
