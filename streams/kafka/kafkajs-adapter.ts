/**
 * The default {@link KafkaTransport}: kafkajs 2.2.x. Another client (e.g. one built on
 * librdkafka) plugs in by implementing the same interface; nothing outside streams/kafka
 * imports kafkajs directly except infra/kafka (client, admin, probe).
 */
import type { KafkaConnectionConfig } from '../../infra/kafka/client-config.js';
import { kafkajsClient } from '../../infra/kafka/kafkajs-client.js';
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
