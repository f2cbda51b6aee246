import { defer, tap, type MonoTypeOperatorFunction, type Observable } from 'rxjs';
import type { Outbound } from '../../schemas/outbound.js';
import { spaMetrics } from './metrics.js';
import { telemetryActive } from './telemetry.js';

/**
 * Counts the generator's output into the spa_* counters (infra/otel/README.md), passing every
 * record through unchanged: `spa_records_total{topic}` for each record,
 * `spa_trajectories_total{env,policy}` and `spa_env_steps_total{env}` (the trajectory's
 * `num_actions`) per raw trajectory, and `spa_rejects_total{reason,source}` per DLQ record.
 * Prometheus turns these totals into env steps/s and trajectories/s with `rate()`.
 *
 * Instruments are looked up at subscription, so a pipeline built before `startTelemetry`
 * still counts; while telemetry is off the tap is skipped altogether.
 */
export function meterOutbound<T extends Outbound>(): MonoTypeOperatorFunction<T> {
  return (source) => defer(() => (telemetryActive() ? metered(source) : source));
}

function metered<T extends Outbound>(source: Observable<T>): Observable<T> {
  const metrics = spaMetrics();
  const topicLabels = new Map<string, { topic: string }>();
  return source.pipe(
    tap((outbound) => {
      let labels = topicLabels.get(outbound.topic);
      if (labels === undefined) topicLabels.set(outbound.topic, (labels = { topic: outbound.topic }));
      metrics.records.add(1, labels);
      if (outbound.topic === 'trajectories') {
        const { env, policy, num_actions: steps } = outbound.record;
        metrics.trajectories.add(1, { env, policy });
        metrics.envSteps.add(steps, { env });
      } else if (outbound.topic === 'dlq') {
        metrics.rejects.add(1, { reason: outbound.record.reason, source: outbound.record.source });
      }
    }),
  );
}
