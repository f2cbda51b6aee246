import { lastValueFrom, map, toArray } from 'rxjs';
import type { SpaRecordName, SpaRecordTypes } from '../../schemas/index.js';
import { readTopic, type KafkaConnection } from '../../streams/kafka/consume-spa.js';
import { decodeKafkaRecord } from '../../streams/kafka/spa-records.js';
import type { ConsumedRecord } from '../../infra/kafka/client/transport.js';

/**
 * Every committed record of `topic` (up to the end offsets when the read starts), mapped by
 * `each`, re-reading (up to 15 s) until at least `count` arrived: a transaction's commit markers
 * are written after the producer's commit returns, so the last stable offset a fresh reader sees
 * can lag a just-committed transaction by a moment.
 */
export async function readCommitted<T>(
  kafka: KafkaConnection,
  topic: string,
  each: (record: ConsumedRecord) => T,
  count = 0,
): Promise<T[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const records = await readOnce(kafka, topic, each);
    if (records.length >= count || Date.now() > deadline) return records;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** {@link readCommitted}, each record decoded as `name` (an undecodable one fails the read). */
export function readAllRecords<N extends SpaRecordName>(
  kafka: KafkaConnection,
  topic: string,
  name: N,
  count = 0,
): Promise<SpaRecordTypes[N][]> {
  return readCommitted(
    kafka,
    topic,
    (record) => {
      const decoded = decodeKafkaRecord(name, record);
      if (!decoded.ok) throw new Error(`${topic}@${record.offset}: ${decoded.rejected.detail}`);
      return decoded.record;
    },
    count,
  );
}

async function readOnce<T>(
  kafka: KafkaConnection,
  topic: string,
  each: (record: ConsumedRecord) => T,
): Promise<T[]> {
  const read = await readTopic(kafka, { topic, start: { kind: 'earliest' } });
  const records = await lastValueFrom(
    read.records.pipe(
      map(({ record, ack }) => {
        ack();
        return each(record);
      }),
      toArray(),
    ),
  );
  await read.closed;
  return records;
}
