import { ensureBroker, existingBroker, type BrokerStartOptions } from '../../infra/kafka/broker.js';
import { kafkaConfigFromEnv, type KafkaConnectionConfig } from '../../infra/kafka/client/config.js';
import { waitForReachableBroker } from '../../infra/kafka/probe.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import { spaTopicNames, spaTopics, type SpaTopicOptions, type TopicRole } from '../../schemas/topics.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import type { KafkaTransport } from '../../infra/kafka/client/transport.js';

/** Everything a command needs to talk to SPA's topics. */
export interface SpaKafka {
  readonly config: KafkaConnectionConfig;
  readonly transport: KafkaTransport;
  readonly topics: Readonly<Record<TopicRole, string>>;
  close(): Promise<void>;
}

export interface ConnectOptions {
  readonly topics?: SpaTopicOptions;
  readonly broker?: BrokerStartOptions;
  readonly clientId?: string;
  /** A look, not a job: start no broker and create no topic (`spa topics`). */
  readonly readOnly?: boolean;
}

/**
 * Connects to SPA's Kafka: `KAFKA_BROKERS`' cluster when set, otherwise the local broker from
 * infra/kafka (started if it is not running); the topic definitions are applied idempotently.
 */
export async function connectSpaKafka(options: ConnectOptions = {}): Promise<SpaKafka> {
  const broker = options.readOnly ? await existingBroker(options.broker) : await ensureBroker(options.broker);
  if (broker.external) {
    // A dead KAFKA_BROKERS fails here in seconds instead of after the client's whole retry budget.
    const seconds = Number(process.env['SPA_KAFKA_CONNECT_TIMEOUT_S'] ?? 8);
    await waitForReachableBroker(broker.brokers, seconds * 1000, () =>
      process.stderr.write(
        `[kafka] waiting for KAFKA_BROKERS=${broker.brokers.join(',')} to accept connections (up to ${seconds} s)\n`,
      ),
    );
  }
  const config = kafkaConfigFromEnv(process.env, {
    brokers: [...broker.brokers],
    clientId: options.clientId ?? 'spa',
  });
  if (!options.readOnly) await applyTopicsTo(config.brokers, spaTopics(options.topics), config);
  const transport = kafkaTransport(config);
  return { config, transport, topics: spaTopicNames(options.topics), close: () => transport.close() };
}
