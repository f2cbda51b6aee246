/**
 * The `spa_*` instruments (issue: metrics with units). Counters are monotonic totals; the
 * per-second figures the dashboard shows are Prometheus `rate(spa_…_total[1m])` over them,
 * so nothing here keeps a clock or a window.
 *
 * Until telemetry starts, `spaMetrics()` hands out instruments of the API's no-op meter, so a
 * caller can record unconditionally.
 *
 * The per-record counters are {@link LocalCounter}s: a synchronous SDK `Counter.add` costs
 * several µs here (attribute hashing into every reader's storage), which alone would exceed
 * the 5% budget on the random-policy generator (~20 µs of work per record), so totals are
 * kept in a Map and handed to the SDK by an observable counter at each collection. Prometheus
 * sees the same monotonic `_total` series either way.
 */
import { metrics, type Attributes, type Histogram, type Meter } from '@opentelemetry/api';

/** Name of the meter (instrumentation scope) every spa_* instrument belongs to. */
const SPA_METER_NAME = 'spa';

/** Current lag of one consumed partition, as reported to the `spa_consumer_lag` gauge. */
export interface PartitionLag {
  readonly topic: string;
  readonly partition: number;
  /** Records between the consumer's position and the high watermark. */
  readonly lag: number;
}

/** Something that can say, when scraped, how far behind each consumed partition is. */
export type ConsumerLagSource = () => Iterable<PartitionLag>;

// Staleness is counted in policy versions; the trainer bounds it at a few (design: bounded staleness).
const stalenessBuckets = [0, 1, 2, 3, 4, 6, 8, 16, 32];
// Waits span sub-millisecond hand-offs to multi-second trainer steps.
const waitBuckets = [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60];
// Per-element stage work is microseconds to milliseconds.
const stageBuckets = [0.00001, 0.00005, 0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1];

/**
 * A monotonic counter summed in-process and reported at collection time (see module doc).
 * Label values come from small closed sets (envs, topics, reasons, policies), so the map of
 * series stays small; only the attributes named in `labels` are kept.
 */
export class LocalCounter {
  private readonly series = new Map<string, CounterSeries>();

  constructor(
    meter: Meter,
    name: string,
    options: { unit: string; description: string },
    private readonly labels: readonly string[],
  ) {
    meter.createObservableCounter(name, options).addCallback((result) => {
      for (const { attributes, value } of this.series.values()) result.observe(value, attributes);
    });
  }

  /** Adds a non-negative `value` to the series of `attributes`. */
  add(value: number, attributes: Attributes = {}): void {
    addTo(this.entry(attributes), value);
  }

  /**
   * The series of `attributes` as a handle: its `add` skips building the label key, for
   * callers that count every record and can keep the handle per label value.
   */
  bind(attributes: Attributes): BoundCounter {
    const entry = this.entry(attributes);
    return { add: (value) => addTo(entry, value) };
  }

  private entry(attributes: Attributes): CounterSeries {
    let key = '';
    for (const label of this.labels) key += `${String(attributes[label])}\u0000`;
    let entry = this.series.get(key);
    if (entry === undefined) {
      const kept: Attributes = {};
      for (const label of this.labels) if (attributes[label] !== undefined) kept[label] = attributes[label];
      this.series.set(key, (entry = { attributes: kept, value: 0 }));
    }
    return entry;
  }
}

/** One series of a {@link LocalCounter}, bound to its attributes. */
export interface BoundCounter {
  /** Adds a non-negative `value`. */
  add(value: number): void;
}

interface CounterSeries {
  readonly attributes: Attributes;
  value: number;
}

function addTo(series: CounterSeries, value: number): void {
  if (!(value >= 0)) throw new Error(`counter increment ${value} must be a non-negative number`);
  series.value += value;
}

/** The project's instruments, all on one meter. Attribute names are the Prometheus labels. */
export class SpaMetrics {
  /** Env steps executed (actions applied to an env), {env}. */
  readonly envSteps: LocalCounter;
  /** Finished self-play episodes, {env, policy}. */
  readonly trajectories: LocalCounter;
  /** Records written to a logical topic, {topic}. */
  readonly records: LocalCounter;
  /** Record bytes (key + value + headers) sent or received, {topic, operation: send|receive}. */
  readonly topicBytes: LocalCounter;
  /** Rejected records by machine-readable reason, {reason, source}. */
  readonly rejects: LocalCounter;
  /** Tokens the generator policy produced, {policy}. */
  readonly generationTokens: LocalCounter;
  /** Tokens the trainer consumed in optimizer steps, {stage: sft|ppo}. */
  readonly trainerTokens: LocalCounter;
  /** Trainer policy version minus the record's policy version, at consumption. */
  readonly policyStaleness: Histogram;
  /** Time a consumer (the trainer) waited for its next batch of records. */
  readonly waitForBatch: Histogram;
  /** Time a generator waited for a policy (to resolve, to load, or to act). */
  readonly waitForPolicy: Histogram;
  /** Per-element work of one pipeline stage, {stage}. */
  readonly stageSeconds: Histogram;

  private readonly lagSources = new Set<ConsumerLagSource>();

  constructor(private readonly meter: Meter) {
    this.envSteps = new LocalCounter(
      meter,
      'spa_env_steps_total',
      {
        unit: '{step}',
        description: 'Env steps executed by the generators',
      },
      ['env'],
    );
    this.trajectories = new LocalCounter(
      meter,
      'spa_trajectories_total',
      {
        unit: '{trajectory}',
        description: 'Finished self-play episodes',
      },
      ['env', 'policy'],
    );
    this.records = new LocalCounter(
      meter,
      'spa_records_total',
      {
        unit: '{record}',
        description: 'Records emitted to a logical topic by the generator pipeline',
      },
      ['topic'],
    );
    this.topicBytes = new LocalCounter(
      meter,
      'spa_topic_bytes_total',
      {
        unit: 'By',
        description: 'Kafka record bytes (key + value + headers) per topic and direction',
      },
      ['topic', 'operation'],
    );
    this.rejects = new LocalCounter(
      meter,
      'spa_rejects_total',
      {
        unit: '{record}',
        description: 'Records sent to the dead-letter topic, by reason',
      },
      ['reason', 'source'],
    );
    this.generationTokens = new LocalCounter(
      meter,
      'spa_generation_tokens_total',
      {
        unit: '{token}',
        description: 'Tokens generated by the self-play policy',
      },
      ['policy'],
    );
    this.trainerTokens = new LocalCounter(
      meter,
      'spa_trainer_tokens_total',
      {
        unit: '{token}',
        description: 'Tokens consumed by trainer optimizer steps',
      },
      ['stage'],
    );
    this.policyStaleness = meter.createHistogram('spa_policy_staleness', {
      unit: '{version}',
      description: 'Trainer policy version minus the policy version that generated the record',
      advice: { explicitBucketBoundaries: stalenessBuckets },
    });
    this.waitForBatch = meter.createHistogram('spa_wait_for_batch_seconds', {
      unit: 's',
      description: 'Time the consumer waited for its next batch (high = generators are the bottleneck)',
      advice: { explicitBucketBoundaries: waitBuckets },
    });
    this.waitForPolicy = meter.createHistogram('spa_wait_for_policy_seconds', {
      unit: 's',
      description: 'Time the generator waited for a policy (high = trainer or inference is the bottleneck)',
      advice: { explicitBucketBoundaries: waitBuckets },
    });
    this.stageSeconds = meter.createHistogram('spa_stage_seconds', {
      unit: 's',
      description: 'Per-element processing time of one pipeline stage',
      advice: { explicitBucketBoundaries: stageBuckets },
    });
    meter
      .createObservableGauge('spa_consumer_lag', {
        unit: '{record}',
        description: 'High watermark minus the consumer position, per partition',
      })
      .addCallback((result) => {
        for (const source of this.lagSources)
          for (const { topic, partition, lag } of source()) result.observe(lag, { topic, partition });
      });
  }

  /**
   * Registers a lag reporter read at every collection (scrape or export); returns the
   * function that unregisters it (call it when the consumer closes).
   */
  observeConsumerLag(source: ConsumerLagSource): () => void {
    this.lagSources.add(source);
    return () => this.lagSources.delete(source);
  }

  /** Records one consumed record's staleness: `trainerVersion - recordVersion` (never negative). */
  recordStaleness(trainerVersion: number, recordVersion: number, attributes?: Attributes): void {
    this.policyStaleness.record(Math.max(0, trainerVersion - recordVersion), attributes);
  }

  /** Awaits `work` and records how long it took in `histogram` (seconds), even when it throws. */
  async timeWait<T>(histogram: Histogram, work: Promise<T> | (() => Promise<T>), attributes?: Attributes) {
    const start = performance.now();
    try {
      return await (typeof work === 'function' ? work() : work);
    } finally {
      histogram.record((performance.now() - start) / 1000, attributes);
    }
  }

  /** The meter behind these instruments (for callers adding their own spa_* instrument). */
  get spaMeter(): Meter {
    return this.meter;
  }
}

let current: SpaMetrics | undefined;

/**
 * The process's spa_* instruments: real ones while telemetry runs, no-op ones otherwise.
 * Call it where you record (not once at import time), so a later `startTelemetry` is seen.
 */
export function spaMetrics(): SpaMetrics {
  current ??= new SpaMetrics(metrics.getMeter(SPA_METER_NAME));
  return current;
}

/** Rebuilds the instruments on the current global meter provider; telemetry.ts calls it on start/stop. */
export function resetSpaMetrics(): SpaMetrics {
  current = new SpaMetrics(metrics.getMeter(SPA_METER_NAME));
  return current;
}

/** A lag table the Kafka source updates per fetched batch and the gauge reads per scrape. */
export class ConsumerLagTable {
  private readonly lags = new Map<string, PartitionLag>();

  /** Notes that `nextOffset` is the next record to read while the partition's end is `highWatermark`. */
  update(topic: string, partition: number, highWatermark: bigint, nextOffset: bigint): void {
    const lag = highWatermark > nextOffset ? Number(highWatermark - nextOffset) : 0;
    this.lags.set(`${topic}\u0000${partition}`, { topic, partition, lag });
  }

  /** The latest lag of every partition seen. */
  readonly read: ConsumerLagSource = () => this.lags.values();
}
