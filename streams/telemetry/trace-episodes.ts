import { Observable, type MonoTypeOperatorFunction } from 'rxjs';
import type { StepRecord } from '../../schemas/step-record.js';
import { episodeTraces, startEpisodeSpan, type EpisodeSpan } from './episode-spans.js';
import { telemetryActive } from './telemetry.js';

interface OpenEpisode {
  readonly episode: EpisodeSpan;
  /** When this episode's previous record left (performance.now), for the next turn's start. */
  last: number;
  steps: number;
}

/**
 * Opens an `episode` span per trajectory (with a `turn N` event per StepRecord) from the
 * episode stream alone, passing every record through unchanged. Place it right after
 * `episodes(…)`, before `toTrajectory`, so every later stage and the Kafka sink find the
 * episode's context. Episodes not drawn for tracing are only registered (unsampled), so they
 * cost a map entry and a clock read per record.
 *
 * Timing as seen from the stream: the episode span opens when the stream last emitted before
 * its first turn arrived (the batch's policy call came after that) and ends with its `final`
 * turn; a turn covers the time since the episode's previous record (the batch's policy call
 * plus the env steps).
 *
 * Open episodes are held in a map bounded by the slots in flight (one batch at a time,
 * streams/episodes), and are ended as failed when the stream errors or is unsubscribed.
 */
export function traceEpisodes(): MonoTypeOperatorFunction<StepRecord> {
  return (source) =>
    new Observable<StepRecord>((subscriber) => {
      if (!telemetryActive()) return source.subscribe(subscriber);
      const open = new Map<string, OpenEpisode>();
      let lastEmitted = performance.now();
      const subscription = source.subscribe({
        next(record) {
          let entry = open.get(record.trajectoryId);
          if (entry === undefined) {
            entry = {
              episode: startEpisodeSpan(attributesOf(record), episodeTraces, lastEmitted),
              last: lastEmitted,
              steps: 0,
            };
            open.set(record.trajectoryId, entry);
          }
          if (entry.episode.recording) {
            entry.episode.recordTurn(record.turn, entry.last);
            entry.steps += record.executed.length;
          }
          entry.last = lastEmitted = performance.now();
          if (record.final) {
            open.delete(record.trajectoryId);
            entry.episode.end({ success: record.success, turns: record.turn, envSteps: entry.steps });
          }
          subscriber.next(record);
        },
        error: (error: unknown) => {
          failOpen(open, error);
          subscriber.error(error);
        },
        complete: () => subscriber.complete(),
      });
      return () => {
        subscription.unsubscribe();
        failOpen(open, new Error('episode stream unsubscribed before the episode ended'));
      };
    });
}

function attributesOf(record: StepRecord) {
  return {
    trajectoryId: record.trajectoryId,
    groupId: record.groupId,
    env: record.env,
    seed: record.seed,
    split: record.split,
    policy: record.policy,
    policyVersion: record.policyVersion,
  };
}

function failOpen(open: Map<string, OpenEpisode>, error: unknown): void {
  for (const { episode } of open.values()) episode.fail(error);
  open.clear();
}
