import { lastValueFrom, reduce } from 'rxjs';
import { readTopic, type KafkaConnection } from './consume-spa.js';

/**
 * The trajectory ids under `runId` (keys `<runId>/…`) that `topic` (the trajectories topic) holds
 * committed, read up to the last stable offset at the start of the read. A restarted generator
 * (`spa generate`, per shard) reads this after its transactional producer has fenced the killed
 * attempt — that aborts the attempt's open transaction, so everything the attempt left is
 * committed or aborted below the end of this read. A transaction never splits a trajectory's
 * records (publish-outbound.ts), so an id here means all of its records on every topic are committed.
 * Keys only: no value is decoded. The read blocks (256 records in flight), it does not buffer.
 * Limit: the read ends at the last stable offset, so another producer's transaction left open
 * since before the predecessor's last commit (transactions close within ~100 ms, publish-outbound.ts)
 * would hide the records behind it, and their trajectories would be played again.
 */
export async function committedTrajectoryIds(
  kafka: KafkaConnection,
  topic: string,
  runId: string,
): Promise<Set<string>> {
  const prefix = `${runId}/`;
  const read = await readTopic(kafka, { topic, start: { kind: 'earliest' }, purpose: 'spa-resume' });
  const ids = await lastValueFrom(
    read.records.pipe(
      reduce((found, { record, ack }) => {
        const key = record.key?.toString('utf8');
        if (key?.startsWith(prefix)) found.add(key);
        ack();
        return found;
      }, new Set<string>()),
    ),
  );
  await read.closed;
  return ids;
}
