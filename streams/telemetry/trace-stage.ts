import type { Attributes, Histogram } from '@opentelemetry/api';
import { Observable, Subscriber, type OperatorFunction } from 'rxjs';
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
      const spans = stageSpansEnabled() ? stageSpanner(stage, options.registry ?? episodeTraces) : undefined;
      const clock = new StageClock(spaMetrics().stageSeconds, { stage }, every, spans);
      const timed = new Observable<T>((inner) => source.subscribe(new StageInput(inner, clock)));
      return operator(timed).subscribe(new StageOutput(subscriber, clock));
    });
}

type StageSpanner = (value: unknown, entered: number, left: number) => void;

/** One subscription's timing state, shared by the stage's input and output side. */
class StageClock {
  private inputs = 0;
  private entered = 0;
  private armed = false;

  constructor(
    private readonly histogram: Histogram,
    private readonly labels: Attributes,
    private readonly every: number,
    private readonly spans: StageSpanner | undefined,
  ) {}

  /** An input enters the operator; reads the clock only for timed inputs (or always when spans need start times). */
  enter(): void {
    // An output is timed only when its latest input was: a stage that gathers many inputs
    // into one output (toTrajectory) must not be charged for the upstream work in between.
    this.armed = ++this.inputs % this.every === 0;
    if (this.armed || this.spans) this.entered = performance.now();
  }

  /** An output leaves the operator: passes it to `next` with the clock stopped around it. */
  leave<R>(value: R, next: (value: R) => void): void {
    if (!(this.armed || this.spans)) return next(value);
    const left = performance.now();
    if (this.armed) this.histogram.record((left - this.entered) / 1000, this.labels);
    this.armed = false;
    this.spans?.(value, this.entered, left);
    next(value);
    if (this.spans) this.entered = performance.now();
  }
}

// The two sides are Subscriber subclasses, as RxJS's own operators are, not partial observers:
// `subscribe({ next })` wraps an observer in two more layers (SafeSubscriber, ConsumerObserver)
// that every element of every traced stage would cross (docs/experiments/2026-11-26-telemetry-cost.md).

/** Marks each input of the stage on its way into the operator. */
class StageInput<T> extends Subscriber<T> {
  constructor(
    destination: Subscriber<T>,
    private readonly clock: StageClock,
  ) {
    super(destination);
  }

  protected override _next(value: T): void {
    this.clock.enter();
    this.destination.next(value);
  }
}

/** Times each output of the operator on its way downstream. */
class StageOutput<R> extends Subscriber<R> {
  private readonly forward = (value: R) => this.destination.next(value);

  constructor(
    destination: Subscriber<R>,
    private readonly clock: StageClock,
  ) {
    super(destination);
  }

  protected override _next(value: R): void {
    this.clock.leave(value, this.forward);
  }
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
