/**
 * The default {@link KafkaTransport}: kafkajs 2.2.x. Another client (e.g. one built on
 * librdkafka) plugs in by implementing the same interface; nothing outside streams/kafka
 * imports kafkajs directly except the admin helpers of infra/kafka.
 */
import type { Admin } from 'kafkajs';
import type { KafkaConnectionConfig } from './config.js';
import { describeKafkaError, kafkajsClient } from './kafkajs-client.js';
import { createKafkajsSink } from './kafkajs-sink.js';
import { createKafkajsSource } from './kafkajs-source.js';
import type { KafkaTransport, RecordSink, RecordSource } from './transport.js';

/** A transport over kafkajs; `close()` closes every sink and source it handed out. */
export function kafkajsTransport(config: KafkaConnectionConfig): KafkaTransport {
  const kafka = kafkajsClient(config);
  const open = new Set<RecordSink | RecordSource>();
  const track = <T extends RecordSink | RecordSource>(handle: T): T => {
    const close = handle.close.bind(handle);
    open.add(handle);
    return Object.assign(handle, { close: () => (open.delete(handle), close()) });
  };
  return {
    sink: async (options) => track(await createKafkajsSink(kafka, config, options)),
    source: async (options) => track(await createKafkajsSource(kafka, config, options)),
    async close() {
      await Promise.allSettled([...open].map((handle) => handle.close()));
    },
  };
}

/** A connected kafkajs admin client (topic definitions, offsets); the caller disconnects it. */
export async function connectKafkajsAdmin(config: KafkaConnectionConfig): Promise<Admin> {
  const admin = kafkajsClient(config).admin();
  try {
    await admin.connect();
  } catch (error) {
    throw describeKafkaError(error, 'connecting the admin client', config);
  }
  return admin;
}
