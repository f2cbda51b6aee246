/**
 * Episode spans (infra/otel/README.md): each self-play episode is one trace whose root is the
 * `episode` span, with a `turn N` event per assistant turn. The records the pipeline
 * derives from an episode (trajectory, SFT rows, rollout, DLQ entry) find the episode's
 * context by trajectory id in {@link episodeTraces}, so later stages and the Kafka sink
 * continue the same trace without any field added to the records.
 */
import { randomBytes } from 'node:crypto';
import { ROOT_CONTEXT, SpanStatusCode, trace, TraceFlags, type Context, type Span } from '@opentelemetry/api';
import { traceparentOf } from './propagation.js';
import { drawEpisode, spaTracer, telemetryActive } from './telemetry.js';

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
interface EpisodeOutcome {
  readonly success: boolean;
  readonly turns?: number;
  readonly envSteps?: number;
}

/** What the registry keeps per episode: a sampled span's context, or an unsampled one made on demand. */
interface EpisodeEntry {
  context: Context | undefined;
  traceparent: string | undefined;
}

/**
 * Episode contexts by trajectory id, bounded: entries are kept in two generations of at most
 * half the `capacity` (rounded up) each; when the newer one is full it becomes the older and the older is dropped
 * (slides, half the capacity at a time). Dropping only costs the link from a late record to its
 * episode (its spans start a new trace); it never blocks or grows. The default capacity covers
 * many batches in flight.
 *
 * The generations are quick-lru's scheme, written out here (a few lines, no dependency): a
 * registration is one Map insert, where evicting the single oldest entry on every insert cost a
 * delete, an iterator and a hash-table compaction per episode (docs/experiments/2026-11-26-telemetry-cost.md).
 *
 * An episode not drawn for tracing is not registered at all: the first time a record of it
 * asks for a `traceparent` (the Kafka sink), it is registered with fresh unsampled ids (flags
 * 00) that its later records share. So the in-process pipeline pays nothing per dropped
 * episode, and a Kafka generator pays that map entry in its sink instead of in the episode loop.
 */
export class EpisodeTraceRegistry {
  private newer = new Map<string, EpisodeEntry>();
  private older = new Map<string, EpisodeEntry>();
  private readonly generation: number;

  constructor(readonly capacity = 4096) {
    this.generation = Math.max(1, Math.ceil(capacity / 2));
  }

  /** Remembers the context of an episode's span. */
  set(trajectoryId: string, context: Context): void {
    this.put(trajectoryId, { context, traceparent: undefined });
  }

  /**
   * Forgets what an earlier episode of the same id left (a process that plays an id again):
   * called for an episode not drawn, so its records get fresh unsampled ids, not the old span's.
   */
  forget(trajectoryId: string): void {
    if (this.newer.size > 0) this.newer.delete(trajectoryId);
    if (this.older.size > 0) this.older.delete(trajectoryId);
  }

  private put(trajectoryId: string, entry: EpisodeEntry): void {
    if (this.newer.size >= this.generation) {
      this.older = this.newer;
      this.newer = new Map();
    }
    if (this.older.size > 0) this.older.delete(trajectoryId);
    this.newer.set(trajectoryId, entry);
  }

  private entry(trajectoryId: string): EpisodeEntry | undefined {
    return this.newer.get(trajectoryId) ?? this.older.get(trajectoryId);
  }

  /** The context of a traced episode, or `undefined` for one not traced (or evicted). */
  get(trajectoryId: string): Context | undefined {
    return this.entry(trajectoryId)?.context;
  }

  /** True when the episode is registered and drawn for tracing (its spans are recorded). */
  isSampled(trajectoryId: string): boolean {
    const context = this.entry(trajectoryId)?.context;
    return context !== undefined && isSampledContext(context);
  }

  /**
   * The episode's `traceparent` header value, for stamping records on their way to Kafka: its
   * span's for a traced episode; otherwise (not drawn, or evicted) the episode is registered
   * now with an unsampled context, which its later records share.
   */
  traceparent(trajectoryId: string): string | undefined {
    let entry = this.entry(trajectoryId);
    if (entry === undefined) this.put(trajectoryId, (entry = { context: undefined, traceparent: undefined }));
    entry.context ??= unsampledContext();
    entry.traceparent ??= traceparentOf(entry.context);
    return entry.traceparent;
  }

  /** Episodes held (at most `capacity`, rounded up to even). */
  get size(): number {
    return this.newer.size + this.older.size;
  }

  clear(): void {
    this.newer.clear();
    this.older.clear();
  }
}

/**
 * A fresh remote-style context with flags 00: downstream spans (TS or Python) drop themselves.
 * Random ids from node:crypto rather than the SDK's RandomIdGenerator, so that this module, which
 * every generator imports, loads no SDK package while telemetry is off.
 */
function unsampledContext(): Context {
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
    traceFlags: TraceFlags.NONE,
  });
}

function isSampledContext(context: Context): boolean {
  const spanContext = trace.getSpanContext(context);
  return spanContext !== undefined && (spanContext.traceFlags & TraceFlags.SAMPLED) !== 0;
}

/** The process-wide registry the episode loop writes and the stages and sinks read. */
export const episodeTraces = new EpisodeTraceRegistry();

/**
 * A started episode span; end it exactly once. Turns are events on it (`turn N` with the
 * turn's start time and `spa.turn.duration_ms`), not child spans: an event costs a fraction of
 * a span, and a trace backend shows them on the episode's timeline all the same.
 */
export interface EpisodeSpan {
  /** False for an episode not drawn for tracing (or telemetry off): every call is a no-op. */
  readonly recording: boolean;
  /** Runs one turn and records it as a `turn N` event; an error is recorded and rethrown. */
  turn<T>(turn: number, play: () => T): T;
  /** Records a turn that already happened, from `startedAt` (a `performance.now()` value) to now. */
  recordTurn(turn: number, startedAt: number): void;
  /** Ends the episode span with its outcome. */
  end(outcome: EpisodeOutcome): void;
  /** Ends the episode span as failed with `error`. */
  fail(error: unknown): void;
}

/**
 * An episode that was not drawn for tracing, or telemetry off: no SDK span. A dropped episode's
 * records still carry a `traceparent` with flags 00 (the registry makes one on demand), so every
 * downstream span — TS or Python, parent-based — drops itself instead of starting a new trace.
 */
const noopEpisode: EpisodeSpan = {
  recording: false,
  turn: (_turn, play) => play(),
  recordTurn: () => {},
  end: () => {},
  fail: () => {},
};

/**
 * Starts an episode's root span and registers it under its trajectory id, if the episode is
 * drawn for tracing (`sampleRatio`, then the `maxTracesPerSecond` cap); otherwise returns the
 * shared no-op (the registry makes the episode's unsampled ids when a record asks for them).
 * While telemetry is off it returns the no-op without touching the registry.
 * `startedAt` (a `performance.now()` value) backdates the span; default now.
 */
export function startEpisodeSpan(
  attributes: EpisodeAttributes,
  registry: EpisodeTraceRegistry = episodeTraces,
  startedAt?: number,
): EpisodeSpan {
  if (!telemetryActive()) return noopEpisode;
  // The episode is the unit of sampling (telemetry.ts); draw once here.
  if (!drawEpisode()) {
    registry.forget(attributes.trajectoryId);
    return noopEpisode;
  }
  // Each episode is its own trace (root), whatever context the caller happens to run in.
  const span = spaTracer().startSpan('episode', {
    root: true,
    attributes: episodeSpanAttributes(attributes),
    ...(startedAt === undefined ? {} : { startTime: performance.timeOrigin + startedAt }),
  });
  registry.set(attributes.trajectoryId, trace.setSpan(ROOT_CONTEXT, span));
  return recordingEpisode(span);
}

function recordingEpisode(span: Span): EpisodeSpan {
  const origin = performance.timeOrigin;
  const recordTurn = (turn: number, startedAt: number): void => {
    const duration = performance.now() - startedAt;
    span.addEvent(
      `turn ${turn}`,
      { 'spa.turn': turn, 'spa.turn.duration_ms': Math.round(duration * 1000) / 1000 },
      origin + startedAt,
    );
  };
  return {
    recording: true,
    turn<T>(turn: number, play: () => T): T {
      const startedAt = performance.now();
      try {
        return play();
      } catch (error) {
        span.recordException(error instanceof Error ? error : String(error));
        throw error;
      } finally {
        recordTurn(turn, startedAt);
      }
    },
    recordTurn,
    end(outcome: EpisodeOutcome): void {
      span.setAttribute('spa.success', outcome.success);
      if (outcome.turns !== undefined) span.setAttribute('spa.turns', outcome.turns);
      if (outcome.envSteps !== undefined) span.setAttribute('spa.env_steps', outcome.envSteps);
      span.end();
    },
    fail(error: unknown): void {
      markFailed(span, error);
      span.end();
    },
  };
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
