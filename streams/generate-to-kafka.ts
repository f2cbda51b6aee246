import { tap } from 'rxjs';
import type { Outbound, OutboundTopic } from '../schemas/outbound.js';
import { DemandGate, SINK_IN_FLIGHT_LIMIT } from './demand-gate.js';
import type { EpisodeConfig } from './episodes/episode-config.js';
import type { EnvFactory } from './episodes/episodes.js';
import { generatorPipeline, type GeneratorOptions } from './generator-pipeline.js';
import { tracedSink } from './kafka/kafka-spans.js';
import { publishOutbound } from './kafka/publish-outbound.js';
import type { SpaKafka } from './kafka/spa-kafka.js';
import type { PolicySource } from './policies/policy.js';
import { outboundTraceparent } from './telemetry/episode-key.js';

export interface GenerateToKafkaOptions {
  readonly episodes: EpisodeConfig;
  readonly makeEnv: EnvFactory;
  readonly policy: PolicySource;
  readonly pipeline: Omit<GeneratorOptions, 'gate'>;
  /** Stable per logical producer (a restarted run fences its predecessor). */
  readonly transactionalId: string;
  /** Called for every record handed to the sink (progress). */
  readonly onRecord?: (outbound: Outbound) => void;
}

/**
 * Plays episodes through the generator pipeline into SPA's Kafka topics: a traced transactional
 * sink, and a DemandGate so the episode loop blocks while Kafka is behind.
 */
export async function generateToKafka(
  kafka: SpaKafka,
  options: GenerateToKafkaOptions,
): Promise<Record<OutboundTopic, number>> {
  const sink = tracedSink(await kafka.transport.sink({ transactionalId: options.transactionalId }), {
    brokers: kafka.config.brokers,
  });
  const gate = new DemandGate(SINK_IN_FLIGHT_LIMIT);
  const outputs = generatorPipeline(options.episodes, options.makeEnv, options.policy, {
    ...options.pipeline,
    gate,
  }).pipe(tap((o) => options.onRecord?.(o)));
  return publishOutbound(outputs, sink, { topics: kafka.topics, gate, traceparent: outboundTraceparent });
}
