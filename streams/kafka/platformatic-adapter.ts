/**
 * The second {@link KafkaTransport}: @platformatic/kafka 1.x, pure JavaScript, chosen with
 * `SPA_KAFKA_CLIENT=platformatic` (kafka-client.ts; kafkajs stays the default). Same guarantees
 * as the kafkajs adapter: idempotent producer with acks=all, transactions with offsets,
 * read_committed consumer groups, keys partitioned as kafkajs does; what it does not cover is in
 * infra/kafka/README.md ("Choosing the client"). Nothing outside the platformatic-* files
 * imports the library.
 */
import { FindCoordinatorKeyTypes } from '@platformatic/kafka';
import type { Admin } from '@platformatic/kafka';
import type { KafkaAdmin } from '../../infra/kafka/admin.js';
import type { KafkaConnectionConfig } from '../../infra/kafka/client-config.js';
import { platformaticAdmin, platformaticAdminClient } from '../../infra/kafka/platformatic-admin.js';
import { describePlatformaticError } from '../../infra/kafka/platformatic-client.js';
import { createPlatformaticSink } from './platformatic-sink.js';
import { createPlatformaticSource } from './platformatic-source.js';
import type { KafkaTransport, RecordSink, RecordSource } from './transport.js';

/** A transport over @platformatic/kafka; `close()` closes every sink, source and admin it handed out. */
export function platformaticTransport(config: KafkaConnectionConfig): KafkaTransport {
  const open = new Set<RecordSink | RecordSource | KafkaAdmin>();
  const track = <T extends RecordSink | RecordSource | KafkaAdmin>(handle: T): T => {
    const close = handle.close.bind(handle);
    open.add(handle);
    return Object.assign(handle, { close: () => (open.delete(handle), close()) });
  };
  // One admin client of the transport's own for what sinks and sources ask on the side
  // (start offsets, group coordinators, deleting ephemeral groups); made on first use.
  let shared: Admin | undefined;
  const sharedAdmin = (): Admin => (shared ??= platformaticAdminClient(config));
  const groupCoordinator = async (groupId: string): Promise<number> => {
    const [found] = await sharedAdmin().findCoordinator({
      keyType: FindCoordinatorKeyTypes.GROUP,
      keys: [groupId],
    });
    if (!found) throw new Error(`Kafka named no coordinator for consumer group "${groupId}"`);
    return found.nodeId;
  };
  return {
    sink: async (options) => track(await createPlatformaticSink(config, groupCoordinator, options)),
    source: async (options) => track(await createPlatformaticSource(config, sharedAdmin(), options)),
    async admin() {
      const client = platformaticAdminClient(config);
      try {
        // The library connects on first use; a connected admin is what the port hands out.
        await client.metadata({ topics: [] });
      } catch (error) {
        await client.close().catch(() => undefined);
        throw describePlatformaticError(error, 'connecting the admin client', config);
      }
      return track(platformaticAdmin(client));
    },
    async close() {
      await Promise.allSettled([...open].map((handle) => handle.close()));
      await shared?.close().catch(() => undefined);
      shared = undefined;
    },
  };
}
