import { Observable, Subscriber, type MonoTypeOperatorFunction } from 'rxjs';
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
      const tracer = new EpisodeTracer(subscriber);
      source.subscribe(tracer);
      return () => tracer.failOpen(new Error('episode stream unsubscribed before the episode ended'));
    });
}

/**
 * The per-subscription state. A Subscriber subclass, as RxJS's own operators are, not a
 * partial observer: `subscribe({ next })` adds two wrapping layers every record would cross
 * (infra/otel/README.md#cost).
 */
class EpisodeTracer extends Subscriber<StepRecord> {
  private readonly open = new Map<string, OpenEpisode>();
  private lastEmitted = performance.now();

  protected override _next(record: StepRecord): void {
    let entry = this.open.get(record.trajectoryId);
    if (entry === undefined) {
      entry = {
        episode: startEpisodeSpan(attributesOf(record), episodeTraces, this.lastEmitted),
        last: this.lastEmitted,
        steps: 0,
      };
      this.open.set(record.trajectoryId, entry);
    }
    if (entry.episode.recording) {
      entry.episode.recordTurn(record.turn, entry.last);
      entry.steps += record.executed.length;
    }
    entry.last = this.lastEmitted = performance.now();
    if (record.final) {
      this.open.delete(record.trajectoryId);
      entry.episode.end({ success: record.success, turns: record.turn, envSteps: entry.steps });
    }
    this.destination.next(record);
  }

  protected override _error(error: unknown): void {
    this.failOpen(error);
    super._error(error);
  }

  /** Ends every open episode as failed with `error`. */
  failOpen(error: unknown): void {
    for (const { episode } of this.open.values()) episode.fail(error);
    this.open.clear();
  }
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
