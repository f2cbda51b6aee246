/**
 * The client the pipeline's transport is built on: kafkajs (kafkajs-adapter.ts). Everything else
 * reaches Kafka through the port (transport.ts) it returns, so another client (e.g. one built on
 * librdkafka) is one adapter implementing that port and this one line.
 */
import type { KafkaConnectionConfig } from './config.js';
import { kafkajsTransport } from './kafkajs-adapter.js';
import type { KafkaTransport } from './transport.js';

/** The transport for `config`. */
export function kafkaTransport(config: KafkaConnectionConfig): KafkaTransport {
  return kafkajsTransport(config);
}
