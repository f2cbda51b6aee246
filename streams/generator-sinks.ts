import { tap, type Observable } from 'rxjs';
import type { Outbound, OutboundTopic } from '../schemas/outbound.js';
import { DemandGate, SINK_IN_FLIGHT_LIMIT } from './demand-gate.js';
import type { EpisodeConfig } from './episodes/episode-config.js';
import type { EnvFactory } from './episodes/episodes.js';
import { writeJsonl, type JsonlPaths } from './files/jsonl-sink.js';
import { generatorPipeline, type PipelineOptions } from './generator-pipeline.js';
import { tracedSink } from './kafka/kafka-spans.js';
import { publishOutbound } from './kafka/publish-outbound.js';
import type { SpaKafka } from './kafka/spa-kafka.js';
import type { PolicySource } from './policies/policy.js';
import { outboundTraceparent } from './telemetry/episode-key.js';

/** One generator run: what plays, and what the pipeline makes of it. */
export interface GeneratorRun {
  readonly episodes: EpisodeConfig;
  readonly makeEnv: EnvFactory;
  readonly policy: PolicySource;
  /** The pipeline's outputs; its backpressure gate is the sink's. */
  readonly pipeline: Omit<PipelineOptions, 'gate'>;
  /** Called for every record handed to the sink (progress). */
  readonly onRecord?: (outbound: Outbound) => void;
}

/**
 * Plays episodes through the generator pipeline into SPA's Kafka topics: a traced transactional
 * sink, and a DemandGate so the episode loop blocks while Kafka is behind.
 * `transactionalId` is stable per logical producer (a restarted run fences its predecessor).
 */
export async function generateToKafka(
  kafka: SpaKafka,
  transactionalId: string,
  run: GeneratorRun,
): Promise<Record<OutboundTopic, number>> {
  const sink = tracedSink(await kafka.transport.sink({ transactionalId }), {
    brokers: kafka.config.brokers,
  });
  return generateInto(run, (outputs, gate) =>
    publishOutbound(outputs, sink, { topics: kafka.topics, gate, traceparent: outboundTraceparent }),
  );
}

/** The same run into JSON Lines files, one per topic (`spa generate --out <file>`). */
export async function generateToJsonl(
  paths: JsonlPaths,
  run: GeneratorRun,
): Promise<Record<OutboundTopic, number>> {
  return generateInto(run, (outputs, gate) => writeJsonl(outputs, paths, gate));
}

/** The pipeline with a DemandGate between the episode loop and `sink` (blocks while it is behind). */
function generateInto(
  run: GeneratorRun,
  sink: (outputs: Observable<Outbound>, gate: DemandGate) => Promise<Record<OutboundTopic, number>>,
): Promise<Record<OutboundTopic, number>> {
  const gate = new DemandGate(SINK_IN_FLIGHT_LIMIT);
  const outputs = generatorPipeline(run.episodes, run.makeEnv, run.policy, { ...run.pipeline, gate });
  return sink(outputs.pipe(tap((o) => run.onRecord?.(o))), gate);
}
