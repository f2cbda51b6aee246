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
  // Handles per label value, so counting a record builds no key string (infra/otel/README.md#cost).
  const records = boundBy((topic: string) => metrics.records.bind({ topic }));
  const envSteps = boundBy((env: string) => metrics.envSteps.bind({ env }));
  const trajectories = boundBy((env: string) =>
    boundBy((policy: string) => metrics.trajectories.bind({ env, policy })),
  );
  return source.pipe(
    tap((outbound) => {
      records(outbound.topic).add(1);
      if (outbound.topic === 'trajectories') {
        const { env, policy, num_actions: steps } = outbound.record;
        trajectories(env)(policy).add(1);
        envSteps(env).add(steps);
      } else if (outbound.topic === 'dlq') {
        metrics.rejects.add(1, { reason: outbound.record.reason, source: outbound.record.source });
      }
    }),
  );
}

/** `make` memoised by its string argument. */
function boundBy<V>(make: (key: string) => V): (key: string) => V {
  const made = new Map<string, V>();
  return (key) => {
    let value = made.get(key);
    if (value === undefined) made.set(key, (value = make(key)));
    return value;
  };
}
