import { lastValueFrom, map, toArray } from 'rxjs';
import type { SpaRecordName, SpaRecordTypes } from '../../schemas/index.js';
import { readTopic, type KafkaConnection } from '../../streams/kafka/consume-spa.js';
import { decodeKafkaRecord } from '../../streams/kafka/spa-records.js';

/**
 * Every committed record of `topic` decoded as `name`, re-reading (up to 15 s) until at least
 * `count` arrived: a transaction's commit markers are written after the producer's commit returns,
 * so the last stable offset a fresh reader sees can lag a just-committed transaction by a moment.
 */
export async function readAllRecords<N extends SpaRecordName>(
  kafka: KafkaConnection,
  topic: string,
  name: N,
  count = 0,
): Promise<SpaRecordTypes[N][]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const records = await readOnce(kafka, topic, name);
    if (records.length >= count || Date.now() > deadline) return records;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function readOnce<N extends SpaRecordName>(
  kafka: KafkaConnection,
  topic: string,
  name: N,
): Promise<SpaRecordTypes[N][]> {
  const read = await readTopic(kafka, { topic, start: { kind: 'earliest' } });
  const records = await lastValueFrom(
    read.records.pipe(
      map(({ record, ack }) => {
        ack();
        const decoded = decodeKafkaRecord(name, record);
        if (!decoded.ok) throw new Error(`${topic}@${record.offset}: ${decoded.rejected.detail}`);
        return decoded.record;
      }),
      toArray(),
    ),
  );
  await read.closed;
  return records;
}
