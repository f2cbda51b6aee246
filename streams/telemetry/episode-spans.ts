/**
 * Episode and turn spans (issue item 2): each self-play episode is one trace whose root is
 * the `episode` span, with a `turn N` child per assistant turn. The records the pipeline
 * derives from an episode (trajectory, SFT rows, rollout, DLQ entry) find the episode's
 * context by trajectory id in {@link episodeTraces}, so later stages and the Kafka sink
 * continue the same trace without any field added to the records.
 */
import {
  context as apiContext,
  ROOT_CONTEXT,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { RandomIdGenerator } from '@opentelemetry/sdk-trace-base';
import { traceparentOf } from './propagation.js';
import { episodeSampleRatio, spaTracer, telemetryActive } from './telemetry.js';

/** What identifies an episode on its span (attribute names `spa.*`). */
export interface EpisodeAttributes {
  readonly trajectoryId: string;
  readonly groupId: string;
  readonly env: string;
  readonly seed: number;
  readonly split?: string;
  readonly policy?: string;
  readonly policyVersion?: number;
}

/** How an episode ended, recorded on its span. */
export interface EpisodeOutcome {
  readonly success: boolean;
  readonly turns?: number;
  readonly envSteps?: number;
}

/**
 * Episode contexts by trajectory id, bounded: past `capacity` entries the oldest is dropped
 * (slides). Dropping only costs the link from a late record to its episode (its spans start
 * a new trace); it never blocks or grows. The default capacity covers many batches in flight.
 */
export class EpisodeTraceRegistry {
  private readonly contexts = new Map<string, Context>();

  constructor(readonly capacity = 16_384) {}

  /** Remembers the context of an episode's span. */
  set(trajectoryId: string, context: Context): void {
    this.contexts.delete(trajectoryId);
    this.contexts.set(trajectoryId, context);
    if (this.contexts.size > this.capacity) {
      const oldest = this.contexts.keys().next().value;
      if (oldest !== undefined) this.contexts.delete(oldest);
    }
  }

  /** The episode's context, or `undefined` for an unknown (or evicted) episode. */
  get(trajectoryId: string): Context | undefined {
    return this.contexts.get(trajectoryId);
  }

  /** The episode's `traceparent` header value, for stamping records on their way to Kafka. */
  traceparent(trajectoryId: string): string | undefined {
    const context = this.contexts.get(trajectoryId);
    return context === undefined ? undefined : traceparentOf(context);
  }

  get size(): number {
    return this.contexts.size;
  }

  clear(): void {
    this.contexts.clear();
  }
}

/** The process-wide registry the episode loop writes and the stages and sinks read. */
export const episodeTraces = new EpisodeTraceRegistry();

/** A started episode span; end it exactly once. */
export interface EpisodeSpan {
  /** The episode's context (ROOT while telemetry is off). */
  readonly context: Context;
  /** Runs one turn inside a `turn N` child span; the span ends when `play` returns or throws. */
  turn<T>(turn: number, play: () => T): T;
  /** Records a turn that already happened, from `startedAt` (a `performance.now()` value) to now. */
  recordTurn(turn: number, startedAt: number): void;
  /** Ends the episode span with its outcome. */
  end(outcome: EpisodeOutcome): void;
}

const ids = new RandomIdGenerator();

/**
 * An episode that was not drawn for tracing: no SDK span, but a real (unsampled, flags 00)
 * context, so its records still carry a `traceparent` and every downstream span — TS or
 * Python, parent-based — drops itself instead of starting a new sampled trace.
 */
function unsampledEpisode(trajectoryId: string, registry: EpisodeTraceRegistry): EpisodeSpan {
  const context = trace.setSpanContext(ROOT_CONTEXT, {
    traceId: ids.generateTraceId(),
    spanId: ids.generateSpanId(),
    traceFlags: TraceFlags.NONE,
  });
  registry.set(trajectoryId, context);
  return { ...noopEpisode, context };
}

const noopEpisode: EpisodeSpan = {
  context: ROOT_CONTEXT,
  turn: (_turn, play) => play(),
  recordTurn: () => {},
  end: () => {},
};

/**
 * Starts an episode's root span and registers it under its trajectory id, if the episode is
 * drawn for tracing (`sampleRatio`); otherwise registers an unsampled context. While telemetry
 * is off it returns a shared no-op (no allocation, no registry entry). `startedAt` (a
 * `performance.now()` value) backdates the span; default now.
 */
export function startEpisodeSpan(
  attributes: EpisodeAttributes,
  registry: EpisodeTraceRegistry = episodeTraces,
  startedAt?: number,
): EpisodeSpan {
  if (!telemetryActive()) return noopEpisode;
  // The episode is the unit of sampling (telemetry.ts); draw once here.
  if (Math.random() >= episodeSampleRatio()) return unsampledEpisode(attributes.trajectoryId, registry);
  const tracer = spaTracer();
  // Each episode is its own trace (root), whatever context the caller happens to run in.
  const span = tracer.startSpan('episode', {
    root: true,
    attributes: episodeSpanAttributes(attributes),
    ...(startedAt === undefined ? {} : { startTime: performance.timeOrigin + startedAt }),
  });
  const context = trace.setSpan(ROOT_CONTEXT, span);
  registry.set(attributes.trajectoryId, context);
  return {
    context,
    turn<T>(turn: number, play: () => T): T {
      const turnSpan = tracer.startSpan(`turn ${turn}`, { attributes: { 'spa.turn': turn } }, context);
      try {
        return apiContext.with(trace.setSpan(context, turnSpan), play);
      } catch (error) {
        markFailed(turnSpan, error);
        throw error;
      } finally {
        turnSpan.end();
      }
    },
    recordTurn(turn: number, startedAt: number): void {
      const origin = performance.timeOrigin;
      tracer
        .startSpan(
          `turn ${turn}`,
          { startTime: origin + startedAt, attributes: { 'spa.turn': turn } },
          context,
        )
        .end(origin + performance.now());
    },
    end(outcome: EpisodeOutcome): void {
      span.setAttribute('spa.success', outcome.success);
      if (outcome.turns !== undefined) span.setAttribute('spa.turns', outcome.turns);
      if (outcome.envSteps !== undefined) span.setAttribute('spa.env_steps', outcome.envSteps);
      span.end();
    },
  };
}

/**
 * Plays a whole episode inside its span: `play` receives the span (for turns) and returns the
 * outcome. A thrown error marks the span failed and is rethrown.
 */
export async function withEpisodeSpan<T extends EpisodeOutcome>(
  attributes: EpisodeAttributes,
  play: (episode: EpisodeSpan) => T | Promise<T>,
  registry: EpisodeTraceRegistry = episodeTraces,
): Promise<T> {
  const episode = startEpisodeSpan(attributes, registry);
  let outcome: T;
  try {
    outcome = await apiContext.with(episode.context, () => play(episode));
  } catch (error) {
    const span = trace.getSpan(episode.context);
    if (span) markFailed(span, error);
    span?.end();
    throw error;
  }
  episode.end(outcome);
  return outcome;
}

function episodeSpanAttributes(a: EpisodeAttributes) {
  return {
    'spa.trajectory_id': a.trajectoryId,
    'spa.group_id': a.groupId,
    'spa.env': a.env,
    'spa.seed': a.seed,
    ...(a.split === undefined ? {} : { 'spa.split': a.split }),
    ...(a.policy === undefined ? {} : { 'spa.policy': a.policy }),
    ...(a.policyVersion === undefined ? {} : { 'spa.policy_version': a.policyVersion }),
  };
}

function markFailed(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: error instanceof Error ? error.message : String(error),
  });
}
