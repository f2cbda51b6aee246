import { Observable, type MonoTypeOperatorFunction } from 'rxjs';
import { createOperatorSubscriber } from 'rxjs/internal/operators/OperatorSubscriber';
import type { Outbound } from '../../schemas/outbound.js';
import { spaMetrics, type BoundCounter, type SpaMetrics } from './metrics.js';
import { telemetryActive } from './telemetry.js';

/**
 * Counts the generator's output into the spa_* counters (infra/otel/README.md), passing every
 * record through unchanged: `spa_records_total{topic}` for each record,
 * `spa_trajectories_total{env,policy}` and `spa_env_steps_total{env}` (the trajectory's
 * `num_actions`) per raw trajectory, and `spa_rejects_total{reason,source}` per DLQ record.
 * Prometheus turns these totals into env steps/s and trajectories/s with `rate()`.
 *
 * Instruments are looked up at subscription, so a pipeline built before `startTelemetry`
 * still counts; while telemetry is off the source is subscribed unchanged.
 */
export function meterOutbound<T extends Outbound>(): MonoTypeOperatorFunction<T> {
  return (source) =>
    new Observable<T>((subscriber) => {
      if (!telemetryActive()) return source.subscribe(subscriber);
      const meter = new OutboundMeter(spaMetrics());
      // RxJS's own OperatorSubscriber, as in trace-episodes.ts: no subscriber class of ours at
      // RxJS's shared call sites; and no `tap`, whose observer is one more call per record.
      return source.subscribe(
        createOperatorSubscriber(subscriber, (outbound: T) => {
          meter.count(outbound);
          subscriber.next(outbound);
        }),
      );
    });
}

/** Counts records into the spa_* counters. */
class OutboundMeter {
  // Handles per label value, so counting a record builds no key string (infra/otel/README.md#cost).
  private readonly records: (topic: string) => BoundCounter;
  private readonly envSteps: (env: string) => BoundCounter;
  private readonly trajectories: (env: string) => (policy: string) => BoundCounter;

  constructor(private readonly metrics: SpaMetrics) {
    this.records = boundBy((topic) => metrics.records.bind({ topic }));
    this.envSteps = boundBy((env) => metrics.envSteps.bind({ env }));
    this.trajectories = boundBy((env) => boundBy((policy) => metrics.trajectories.bind({ env, policy })));
  }

  /** Adds one record to its counters. */
  count(outbound: Outbound): void {
    this.records(outbound.topic).add(1);
    if (outbound.topic === 'trajectories') {
      const { env, policy, num_actions: steps } = outbound.record;
      this.trajectories(env)(policy).add(1);
      this.envSteps(env).add(steps);
    } else if (outbound.topic === 'dlq') {
      this.metrics.rejects.add(1, { reason: outbound.record.reason, source: outbound.record.source });
    }
  }
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
