import { Observable, Subscriber, type MonoTypeOperatorFunction } from 'rxjs';
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
    new Observable<T>((subscriber) =>
      source.subscribe(telemetryActive() ? new OutboundMeter(subscriber, spaMetrics()) : subscriber),
    );
}

/**
 * Counts each record, then passes it on. A Subscriber subclass, as RxJS's own operators are:
 * `tap` would add an operator subscriber and a wrapped observer that every record crosses
 * (docs/experiments/2026-11-26-telemetry-cost.md).
 */
class OutboundMeter<T extends Outbound> extends Subscriber<T> {
  // Handles per label value, so counting a record builds no key string (docs/experiments/2026-11-26-telemetry-cost.md).
  private readonly records: (topic: string) => BoundCounter;
  private readonly envSteps: (env: string) => BoundCounter;
  private readonly trajectories: (env: string) => (policy: string) => BoundCounter;

  constructor(
    destination: Subscriber<T>,
    private readonly metrics: SpaMetrics,
  ) {
    super(destination);
    this.records = boundBy((topic) => metrics.records.bind({ topic }));
    this.envSteps = boundBy((env) => metrics.envSteps.bind({ env }));
    this.trajectories = boundBy((env) => boundBy((policy) => metrics.trajectories.bind({ env, policy })));
  }

  protected override _next(outbound: T): void {
    this.records(outbound.topic).add(1);
    if (outbound.topic === 'trajectories') {
      const { env, policy, num_actions: steps } = outbound.record;
      this.trajectories(env)(policy).add(1);
      this.envSteps(env).add(steps);
    } else if (outbound.topic === 'dlq') {
      this.metrics.rejects.add(1, { reason: outbound.record.reason, source: outbound.record.source });
    }
    this.destination.next(outbound);
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
