/**
 * The Kafka client behind the two ports: kafkajs (kafkajs-adapter.ts, kafkajs-admin.ts).
 * Everything outside this folder reaches Kafka through what these two return, the transport
 * (transport.ts) and the admin (admin.ts), so another client (e.g. one built on librdkafka) is
 * one adapter implementing both ports and these two lines.
 */
import type { KafkaAdmin } from './admin.js';
import type { KafkaConnectionConfig } from './config.js';
import { kafkajsTransport } from './kafkajs-adapter.js';
import { openKafkajsAdmin } from './kafkajs-admin.js';
import type { KafkaTransport } from './transport.js';

/** The transport for `config`; its `admin()` gives admins of the same connection. */
export function kafkaTransport(config: KafkaConnectionConfig): KafkaTransport {
  return kafkajsTransport(config);
}

/** A connected admin without a transport (the topic apply, the probe, `spa doctor`); the caller closes it. */
export function openKafkaAdmin(config: KafkaConnectionConfig): Promise<KafkaAdmin> {
  return openKafkajsAdmin(config);
}
