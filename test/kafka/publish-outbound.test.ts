import { from } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { Rollout, SftRow, Trajectory } from '../../schemas/index.js';
import type { Outbound } from '../../schemas/outbound.js';
import { publishOutbound } from '../../streams/kafka/publish-outbound.js';
import type { OutgoingRecord, RecordSink } from '../../infra/kafka/client/transport.js';
import { GOLDEN_SAMPLES } from '../fixtures/avro/samples.js';

const topics = { trajectories: 't', sft: 's', rollouts: 'r', dlq: 'd' };
const traceparent = '00-0123456789abcdef0123456789abcdef-0123456789abcdef-01';
const outbound: Outbound[] = [
  { topic: 'trajectories', key: 'a', record: GOLDEN_SAMPLES['Trajectory.v1'] as Trajectory },
  { topic: 'sft', key: 'a', record: GOLDEN_SAMPLES['SftRow.v1'] as SftRow },
  { topic: 'rollouts', key: 'g', record: GOLDEN_SAMPLES['Rollout.v1'] as Rollout },
];

/** Publishes the samples into memory and returns what the sink was sent. */
async function publish(stamp?: () => string): Promise<OutgoingRecord[]> {
  const sent: OutgoingRecord[] = [];
  const send = async (records: readonly OutgoingRecord[]) => (sent.push(...records), []);
  const sink: RecordSink = {
    send,
    oversized: async () => [],
    transaction: (work) => work({ send, sendOffsets: async () => {} }),
    close: async () => {},
  };
  await publishOutbound(from(outbound), sink, { topics, ...(stamp ? { traceparent: stamp } : {}) });
  return sent;
}

describe('publishOutbound', () => {
  it('stamps the traceparent it is given on every record', async () => {
    const sent = await publish(() => traceparent);
    expect(sent.map((r) => r.topic)).toEqual(['t', 's', 'r']);
    for (const record of sent) expect(record.headers?.['traceparent']?.toString()).toBe(traceparent);
  });

  it('writes no traceparent header without one', async () => {
    const sent = await publish();
    expect(sent).toHaveLength(3);
    for (const record of sent) expect(record.headers?.['traceparent']).toBeUndefined();
  });
});
