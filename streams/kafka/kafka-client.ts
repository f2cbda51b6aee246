/**
 * Which Kafka client the pipeline's transport is built on: `SPA_KAFKA_CLIENT=kafkajs` (the
 * default) or `platformatic` (@platformatic/kafka). Both implement the same port
 * (transport.ts); what each supports is in infra/kafka/README.md ("Choosing the client").
 */
import type { KafkaConnectionConfig } from '../../infra/kafka/client-config.js';
import { kafkajsTransport } from './kafkajs-adapter.js';
import { platformaticTransport } from './platformatic-adapter.js';
import type { KafkaTransport } from './transport.js';

const clients = {
  kafkajs: kafkajsTransport,
  platformatic: platformaticTransport,
} as const;

/** A client the transport can be built on. */
export type KafkaClientName = keyof typeof clients;

/** Reads SPA_KAFKA_CLIENT (default kafkajs); a bad value names the variable and the allowed values. */
export function kafkaClientFromEnv(env: NodeJS.ProcessEnv = process.env): KafkaClientName {
  const value = env['SPA_KAFKA_CLIENT']?.trim().toLowerCase() ?? '';
  if (value === '') return 'kafkajs';
  if (Object.hasOwn(clients, value)) return value as KafkaClientName;
  throw new Error(
    `SPA_KAFKA_CLIENT="${env['SPA_KAFKA_CLIENT']}" is not a Kafka client; expected one of: ${Object.keys(clients).join(', ')}`,
  );
}

/** The transport for `config` on the client SPA_KAFKA_CLIENT names (kafkajs unless set). */
export function kafkaTransport(
  config: KafkaConnectionConfig,
  client: KafkaClientName = kafkaClientFromEnv(),
): KafkaTransport {
  return clients[client](config);
}
