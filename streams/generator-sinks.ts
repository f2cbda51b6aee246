import { tap, type Observable } from 'rxjs';
import type { Outbound, OutboundTopic } from '../schemas/outbound.js';
import { DemandGate, SINK_IN_FLIGHT_LIMIT } from './demand-gate.js';
import type { EpisodeConfig } from './episodes/episode-config.js';
import { plannedTrajectoryIds, type EnvFactory } from './episodes/episodes.js';
import { writeJsonl, type JsonlPaths } from './files/jsonl-sink.js';
import { generatorPipeline, type PipelineOptions } from './generator-pipeline.js';
import { committedTrajectoryIds } from './kafka/committed-trajectories.js';
import { tracedSink } from './kafka/kafka-spans.js';
import { publishOutbound } from './kafka/publish-outbound.js';
import type { SpaKafka } from './kafka/spa-kafka.js';
import type { PolicySource } from '../policies/policy.js';
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
  /**
   * Kafka only: first read which of this run's (and shard's) trajectories an earlier, killed
   * attempt committed and play only the rest, so a restart with the same flags completes the
   * run exactly once. `onResume` hears how many were already done.
   */
  readonly resume?: boolean;
  readonly onResume?: (committed: number) => void;
}

/**
 * Plays episodes through the generator pipeline into SPA's Kafka topics: a traced transactional
 * sink, and a DemandGate so the episode loop blocks while Kafka is behind.
 * `transactionalId` is stable per logical producer (a restarted run fences its predecessor; a
 * shard has its own, episodes/shard.ts). With `run.resume`, what the predecessor committed is
 * read after the fence and not played again.
 */
export async function generateToKafka(
  kafka: SpaKafka,
  transactionalId: string,
  run: GeneratorRun,
): Promise<Record<OutboundTopic, number>> {
  const sink = tracedSink(await kafka.transport.sink({ transactionalId }), {
    brokers: kafka.config.brokers,
  });
  let skip: Set<string> | undefined;
  if (run.resume) {
    // The client registers a transactional id at its first transaction: an empty one fences the
    // predecessor now (InitProducerId returns once the coordinator has aborted its open
    // transaction), so what the read below finds committed can no longer change.
    await sink.transaction(async () => undefined);
    skip = await committedOfRun(kafka, run.episodes);
    run.onResume?.(skip.size);
  }
  return generateInto({ ...run, skip }, (outputs, gate) =>
    publishOutbound(outputs, sink, { topics: kafka.topics, gate, traceparent: outboundTraceparent }),
  );
}

/** The trajectories of `episodes` (its shard's) that the trajectories topic holds committed. */
async function committedOfRun(kafka: SpaKafka, episodes: EpisodeConfig): Promise<Set<string>> {
  const committed = await committedTrajectoryIds(kafka, kafka.topics.trajectories, episodes.runId);
  return new Set(plannedTrajectoryIds(episodes).filter((id) => committed.has(id)));
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
  run: GeneratorRun & { readonly skip?: ReadonlySet<string> },
  sink: (outputs: Observable<Outbound>, gate: DemandGate) => Promise<Record<OutboundTopic, number>>,
): Promise<Record<OutboundTopic, number>> {
  const gate = new DemandGate(SINK_IN_FLIGHT_LIMIT);
  const outputs = generatorPipeline(run.episodes, run.makeEnv, run.policy, {
    ...run.pipeline,
    gate,
    skip: run.skip,
  });
  return sink(outputs.pipe(tap((o) => run.onRecord?.(o))), gate);
}
