/**
 * Which episode a pipeline element belongs to, so its spans join the episode's trace. Every
 * SPA record names its episode: StepRecord.trajectoryId; Trajectory, SftRow and Rollout
 * `trajectory_id`; a DLQ entry its original key (the trajectory id); Outbound and Verdict
 * wrap one of those.
 */
import type { Outbound } from '../../schemas/outbound.js';
import { episodeTraces, type EpisodeTraceRegistry } from './episode-spans.js';
import { telemetryActive } from './telemetry.js';

type Probe = Readonly<Record<string, unknown>>;

function isProbe(value: unknown): value is Probe {
  return typeof value === 'object' && value !== null;
}

/** The trajectory id an element belongs to, or `undefined` for an element of unknown shape. */
export function episodeKeyOf(value: unknown): string | undefined {
  if (!isProbe(value)) return undefined;
  if (typeof value['trajectoryId'] === 'string') return value['trajectoryId'];
  if (typeof value['trajectory_id'] === 'string') return value['trajectory_id'];
  // Outbound: the DLQ is keyed by the rejected record's key (a trajectory id); others by their record.
  if (typeof value['topic'] === 'string' && isProbe(value['record']))
    return value['topic'] === 'dlq' && typeof value['key'] === 'string'
      ? value['key']
      : episodeKeyOf(value['record']);
  if (value['accepted'] === true) return episodeKeyOf(value['value']);
  if (value['accepted'] === false && isProbe(value['rejection'])) {
    const key = value['rejection']['key'];
    return typeof key === 'string' ? key : undefined;
  }
  return undefined;
}

/**
 * The `traceparent` to stamp on an outbound record's Kafka headers (design: Topics, headers
 * carry traceparent) while telemetry runs: its episode's span context, or unsampled ids (flags
 * 00) shared by the episode's records when it is not traced; `undefined` while telemetry is off.
 */
export function outboundTraceparent(
  outbound: Outbound,
  registry: EpisodeTraceRegistry = episodeTraces,
): string | undefined {
  if (!telemetryActive()) return undefined;
  const key = episodeKeyOf(outbound);
  return key === undefined ? undefined : registry.traceparent(key);
}
