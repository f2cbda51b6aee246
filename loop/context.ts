import type { SpaKafka } from '../streams/kafka/spa-kafka.js';
import type { LoopConfig } from './configs.js';
import type { Timed } from './stage-timer.js';

/**
 * What every stage of the loop reads: the run's config, its Kafka topics (`spa.<runId>.*`), the
 * trainer's Python, the run folder and the stage timer. Each stage takes this one object.
 */
export interface LoopContext {
  readonly config: LoopConfig;
  readonly kafka: SpaKafka;
  /** The trainer venv's Python (trainer-process.ts). */
  readonly python: string;
  /** The run folder, absolute: trainer processes run with another working directory. */
  readonly runDir: string;
  readonly runId: string;
  /** The brokers, comma-separated, as trainers and generator processes take them. */
  readonly brokers: string;
  readonly timed: Timed;
  /** Cores' worth of CPU other processes used at the last stage's start (busy-machine.ts). */
  readonly othersCores: () => number;
}
