import { TraceFlags, trace, type Context } from '@opentelemetry/api';
import { Observable, tap, type OperatorFunction } from 'rxjs';
import { episodeTraces, type EpisodeTraceRegistry } from '../streams/telemetry/episode-spans.js';
import { episodeContextOf } from '../streams/telemetry/episode-key.js';
import { spaMetrics } from '../streams/telemetry/metrics.js';
import { spaTracer, telemetryActive } from '../streams/telemetry/telemetry.js';

/** Options for {@link traceStage}. */
export interface TraceStageOptions {
  /** Where episode contexts are looked up; default the process-wide registry. */
  readonly registry?: EpisodeTraceRegistry;
  /**
   * Record one element in `timingEvery` into the histogram (default 16): a histogram record
   * costs µs, the stage's work per element is often less. The sample is systematic, so the
   * distribution is unbiased; element counts come from spa_records_total, not from here.
   */
  readonly timingEvery?: number;
}

function isSampled(context: Context): boolean {
  const spanContext = trace.getSpanContext(context);
  return spanContext !== undefined && (spanContext.traceFlags & TraceFlags.SAMPLED) !== 0;
}

/**
 * Wraps one pipeline stage (any operator) so that each element it emits is timed into
 * `spa_stage_seconds{stage}` and, when the element's episode is traced and sampled, becomes a
 * `stage <name>` span under the episode span (issue item 2: a span per operator stage).
 *
 * The time measured (for one element in `timingEvery`) is the stage's own work: from the input that triggered the output (or
 * from the stage's previous output, when one input yields several) to the output leaving the
 * stage; downstream work is excluded because the clock restarts after `next` returns. While
 * telemetry is off at subscription the stage is subscribed unchanged (zero per-element cost).
 * Nothing is buffered here: the wrapper adds no queue to the operator it wraps.
 */
export function traceStage<T, R>(
  stage: string,
  operator: OperatorFunction<T, R>,
  options: TraceStageOptions = {},
): OperatorFunction<T, R> {
  return (source) =>
    new Observable<R>((subscriber) => {
      if (!telemetryActive()) return operator(source).subscribe(subscriber);
      const registry = options.registry ?? episodeTraces;
      const histogram = spaMetrics().stageSeconds;
      const tracer = spaTracer();
      const labels = { stage };
      const spanName = `stage ${stage}`;
      const origin = performance.timeOrigin;
      const every = options.timingEvery ?? 16;
      if (!(Number.isInteger(every) && every >= 1))
        throw new Error(`traceStage(${stage}): timingEvery ${every} must be an integer >= 1`);
      let seen = 0;
      let entered = performance.now();
      const timed = source.pipe(
        tap(() => {
          entered = performance.now();
        }),
      );
      return operator(timed).subscribe({
        next(value) {
          const left = performance.now();
          if (++seen % every === 0) histogram.record((left - entered) / 1000, labels);
          const parent = episodeContextOf(value, registry);
          if (parent !== undefined && isSampled(parent))
            tracer
              .startSpan(
                spanName,
                { startTime: origin + entered, attributes: { 'spa.stage': stage } },
                parent,
              )
              .end(origin + left);
          subscriber.next(value);
          entered = performance.now();
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
    });
}
