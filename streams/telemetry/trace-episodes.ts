import { Observable, Subscriber, type MonoTypeOperatorFunction } from 'rxjs';
import type { StepRecord } from '../../schemas/step-record.js';
import { episodeTraces, startEpisodeSpan, type EpisodeSpan } from './episode-spans.js';
import { telemetryActive } from './telemetry.js';

interface TracedEpisode {
  readonly episode: EpisodeSpan;
  /** When this episode's previous record left (performance.now), for the next turn's start. */
  last: number;
  steps: number;
}

/**
 * Opens an `episode` span per trajectory (with a `turn N` event per StepRecord) from the
 * episode stream alone, passing every record through unchanged. Place it right after
 * `episodes(…)`, before `toTrajectory`, so every later stage and the Kafka sink find the
 * episode's context. An episode begins with its turn-1 record (streams/episodes plays every
 * slot from turn 1); a record of another turn whose episode was not seen begins nothing.
 *
 * An episode not drawn for tracing costs a draw, a registry check (episode-spans.ts makes its
 * unsampled ids only when a record asks), a few comparisons per record and a clock read at its
 * first and final record (below). A generator drawing ~10 episodes a second out of thousands
 * (the default cap) mostly has none traced, and then pays nothing else per record
 * (docs/experiments/2026-11-26-telemetry-cost.md).
 *
 * Timing as seen from the stream: the episode span opens when the stream emitted its previous
 * turn-1 or final record before the episode's first turn arrived, and ends with its `final`
 * turn; a turn covers the time since the episode's previous record (the batch's policy call
 * plus the env steps). In episodes()' order that opening time is the record just before: a
 * batch's episodes all begin in its first turn, right after the previous batch's last records,
 * which are final.
 *
 * Traced episodes are held in a map bounded by the slots in flight (one batch at a time,
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
 * (docs/experiments/2026-11-26-telemetry-cost.md).
 */
class EpisodeTracer extends Subscriber<StepRecord> {
  /** The open episodes drawn for tracing, by trajectory id. */
  private readonly traced = new Map<string, TracedEpisode>();
  /** When the latest turn-1 or final record (or one of a traced episode) left. */
  private lastEmitted = performance.now();

  protected override _next(record: StepRecord): void {
    if (record.turn === 1) this.begin(record);
    const entry = this.traced.size === 0 ? undefined : this.traced.get(record.trajectoryId);
    if (entry !== undefined) this.recordTurn(entry, record);
    else if (record.turn === 1 || record.final) this.lastEmitted = performance.now();
    this.destination.next(record);
  }

  /** Draws the episode; keeps it only if traced (startEpisodeSpan registers it then). */
  private begin(record: StepRecord): void {
    // A StepRecord carries every EpisodeAttributes field: no copy per episode.
    const episode = startEpisodeSpan(record, episodeTraces, this.lastEmitted);
    if (episode.recording)
      this.traced.set(record.trajectoryId, { episode, last: this.lastEmitted, steps: 0 });
  }

  private recordTurn(entry: TracedEpisode, record: StepRecord): void {
    entry.episode.recordTurn(record.turn, entry.last);
    entry.steps += record.executed.length;
    entry.last = this.lastEmitted = performance.now();
    if (record.final) {
      this.traced.delete(record.trajectoryId);
      entry.episode.end({ success: record.success, turns: record.turn, envSteps: entry.steps });
    }
  }

  protected override _error(error: unknown): void {
    this.failOpen(error);
    super._error(error);
  }

  /** Ends every open traced episode as failed with `error`. */
  failOpen(error: unknown): void {
    for (const { episode } of this.traced.values()) episode.fail(error);
    this.traced.clear();
  }
}
