/**
 * The {@link KafkaTransport} on kafkajs 2.2.x (patched: patches/kafkajs+2.2.4.patch). Another
 * client (e.g. one built on librdkafka) plugs in by implementing the same interface and the
 * admin port (admin.ts), chosen in kafka-client.ts; nothing outside infra/kafka/client/ imports
 * kafkajs (a dependency-cruiser rule).
 */
import type { KafkaAdmin } from './admin.js';
import type { KafkaConnectionConfig } from './config.js';
import { kafkajsAdmin } from './kafkajs-admin.js';
import { connectKafkajsAdmin, kafkajsClient } from './kafkajs-client.js';
import { createKafkajsSink } from './kafkajs-sink.js';
import { createKafkajsSource } from './kafkajs-source.js';
import type { KafkaTransport, RecordSink, RecordSource } from './transport.js';

/** A transport over kafkajs; `close()` closes every sink, source and admin it handed out. */
export function kafkajsTransport(config: KafkaConnectionConfig): KafkaTransport {
  const kafka = kafkajsClient(config);
  const open = new Set<RecordSink | RecordSource | KafkaAdmin>();
  const track = <T extends RecordSink | RecordSource | KafkaAdmin>(handle: T): T => {
    const close = handle.close.bind(handle);
    open.add(handle);
    return Object.assign(handle, { close: () => (open.delete(handle), close()) });
  };
  return {
    sink: async (options) => track(await createKafkajsSink(kafka, config, options)),
    source: async (options) => track(await createKafkajsSource(kafka, config, options)),
    admin: async () => track(kafkajsAdmin(await connectKafkajsAdmin(config, kafka))),
    async close() {
      await Promise.allSettled([...open].map((handle) => handle.close()));
    },
  };
}
