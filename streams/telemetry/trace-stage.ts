import { Observable, type OperatorFunction } from 'rxjs';
import { episodeKeyOf } from './episode-key.js';
import { episodeTraces, type EpisodeTraceRegistry } from './episode-spans.js';
import { spaMetrics } from './metrics.js';
import { spaTracer, stageSpansEnabled, telemetryActive } from './telemetry.js';

/** Options for {@link traceStage}. */
export interface TraceStageOptions {
  /** Where episode contexts are looked up; default the process-wide registry. */
  readonly registry?: EpisodeTraceRegistry;
  /**
   * Time one input in `timingEvery` into the histogram (default 64): a clock read plus a
   * histogram record cost about as much as a cheap stage's work per element. The sample is
   * systematic, so the distribution is unbiased; element counts come from spa_records_total.
   */
  readonly timingEvery?: number;
}

/**
 * Wraps one pipeline stage (any operator) so that its per-element work is timed into
 * `spa_stage_seconds{stage}`, and — only with stage spans on (`stageSpans` /
 * `SPA_TRACE_STAGES=1`) — each element of a sampled episode becomes a `stage <name>` span
 * under the episode span: one span per operator stage, so a slow stage shows in the trace.
 *
 * The time measured is the stage's own work: from a timed input to the first output it
 * yields (a span also covers a later output of the same input, from the previous output);
 * downstream work is excluded because the clock stops before `next` and restarts after it. While telemetry is off at subscription the stage is subscribed unchanged (zero
 * per-element cost). Nothing is buffered here: the wrapper adds no queue to the operator.
 */
export function traceStage<T, R>(
  stage: string,
  operator: OperatorFunction<T, R>,
  options: TraceStageOptions = {},
): OperatorFunction<T, R> {
  const every = options.timingEvery ?? 64;
  if (!(Number.isInteger(every) && every >= 1))
    throw new Error(`traceStage(${stage}): timingEvery ${every} must be an integer >= 1`);
  return (source) =>
    new Observable<R>((subscriber) => {
      if (!telemetryActive()) return operator(source).subscribe(subscriber);
      const histogram = spaMetrics().stageSeconds;
      const labels = { stage };
      const spans = stageSpansEnabled() ? stageSpanner(stage, options.registry ?? episodeTraces) : undefined;
      let inputs = 0;
      let entered = 0;
      let armed = false;
      // Reads the clock only for timed inputs (or always when spans need start times).
      const timed = new Observable<T>((inner) =>
        source.subscribe({
          next(value) {
            // An output is timed only when its latest input was: a stage that gathers many inputs
            // into one output (toTrajectory) must not be charged for the upstream work in between.
            armed = ++inputs % every === 0;
            if (armed || spans) entered = performance.now();
            inner.next(value);
          },
          error: (error: unknown) => inner.error(error),
          complete: () => inner.complete(),
        }),
      );
      return operator(timed).subscribe({
        next(value) {
          if (armed || spans) {
            const left = performance.now();
            if (armed) histogram.record((left - entered) / 1000, labels);
            armed = false;
            spans?.(value, entered, left);
            subscriber.next(value);
            if (spans) entered = performance.now();
          } else subscriber.next(value);
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      });
    });
}

/** Records `stage <name>` spans for elements of sampled episodes (times are performance.now values). */
function stageSpanner(stage: string, registry: EpisodeTraceRegistry) {
  const tracer = spaTracer();
  const name = `stage ${stage}`;
  const origin = performance.timeOrigin;
  return (value: unknown, entered: number, left: number): void => {
    const key = episodeKeyOf(value);
    if (key === undefined || !registry.isSampled(key)) return;
    tracer
      .startSpan(name, { startTime: origin + entered, attributes: { 'spa.stage': stage } }, registry.get(key))
      .end(origin + left);
  };
}

/** An operator factory: any parameters, one operator. */
type OperatorFactory = (...args: never[]) => OperatorFunction<never, unknown>;

/**
 * Decorates operator factories with {@link traceStage}, each under its key as the stage name:
 * `tracedStages({ toTrajectory }).toTrajectory(now)` is `traceStage('toTrajectory', toTrajectory(now))`.
 * The compositions decorate their operators once, so each stage line names only its operator.
 */
export function tracedStages<F extends Record<string, OperatorFactory>>(factories: F): F {
  const traced = Object.entries(factories).map(([stage, factory]) => [
    stage,
    (...args: never[]) => traceStage(stage, factory(...args)),
  ]);
  return Object.fromEntries(traced) as F;
}
