import { Partitioners } from 'kafkajs';

/** Where Kafka's default partitioner (murmur2: kafkajs' DefaultPartitioner, the Java client's) puts `key`. */
export const kafkajsPartition = (key: Buffer, partitions: number): number =>
  Partitioners.DefaultPartitioner()({
    topic: 'any',
    partitionMetadata: Array.from({ length: partitions }, (_, partitionId) => ({
      partitionErrorCode: 0,
      partitionId,
      leader: 1,
      replicas: [1],
      isr: [1],
    })),
    message: { key, value: null },
  });
