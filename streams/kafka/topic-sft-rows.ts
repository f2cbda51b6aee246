import { lastValueFrom, map, toArray } from 'rxjs';
import type { SftRow } from '../../schemas/index.js';
import { readTopic, type KafkaConnection } from './consume-spa.js';
import { decodeKafkaRecord } from './spa-records.js';

/**
 * The committed SftRows of `topic` (a run's `spa.<run>.sft`), read from its start to the end offsets
 * at the start of the read, for `spa export --run`. A record that does not decode as an SftRow
 * stops the read, naming its partition and offset. The rows are collected: a run's SFT topic holds
 * thousands of rows, and a train/validation split holds every row anyway; the read acks each row as
 * it is kept (256 in flight), so it never buffers beyond that.
 */
export async function readSftRowsOfTopic(
  kafka: KafkaConnection,
  topic: string,
  onRow?: () => void,
): Promise<SftRow[]> {
  const read = await readTopic(kafka, { topic, start: { kind: 'earliest' }, purpose: 'spa-export' });
  const rows = await lastValueFrom(
    read.records.pipe(
      map(({ record, ack }) => {
        const decoded = decodeKafkaRecord('SftRow', record);
        ack();
        if (!decoded.ok)
          throw new Error(
            `${topic} partition ${record.partition} offset ${record.offset} is not an SftRow: ` +
              `${decoded.rejected.reason}: ${decoded.rejected.detail}`,
          );
        onRow?.();
        return decoded.record;
      }),
      toArray(),
    ),
  );
  await read.closed;
  return rows;
}
