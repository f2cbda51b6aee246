import { describe, expect, it } from 'vitest';
import { envFactory } from '../../envs/registry.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { generatorPipeline } from '../../streams/generator-pipeline.js';
import { publishOutbound } from '../../streams/kafka/publish-outbound.js';
import type { OutgoingRecord, RecordSink } from '../../streams/kafka/transport.js';
import { builtinPolicy } from '../../streams/policies/builtin.js';

const topics = { trajectories: 't', sft: 's', rollouts: 'r', dlq: 'd' };
const traceparent = '00-0123456789abcdef0123456789abcdef-0123456789abcdef-01';

/** Publishes one small rollout run into memory and returns what the sink was sent. */
async function publish(stamp?: () => string): Promise<OutgoingRecord[]> {
  const sent: OutgoingRecord[] = [];
  const send = async (records: readonly OutgoingRecord[]) => (sent.push(...records), []);
  const sink: RecordSink = {
    send,
    transaction: (work) => work({ send, sendOffsets: async () => {} }),
    close: async () => {},
  };
  const config = episodeConfig({
    env: 'sokoban',
    groups: 2,
    groupSize: 2,
    batches: 1,
    mode: 'base',
    runId: 'pub',
  });
  const outputs = generatorPipeline(
    config,
    envFactory({ name: 'sokoban', puzzles: 'generated' }),
    builtinPolicy('random', { mode: 'base', seed: 3 }),
    { target: 'rollouts' },
  );
  await publishOutbound(outputs, sink, { topics, ...(stamp ? { traceparent: stamp } : {}) });
  return sent;
}

describe('publishOutbound', () => {
  it('stamps the traceparent it is given on every record', async () => {
    const sent = await publish(() => traceparent);
    expect(sent.length).toBeGreaterThan(0);
    for (const record of sent) expect(record.headers?.['traceparent']?.toString()).toBe(traceparent);
  });

  it('writes no traceparent header without one', async () => {
    const sent = await publish();
    expect(sent.length).toBeGreaterThan(0);
    for (const record of sent) expect(record.headers?.['traceparent']).toBeUndefined();
  });
});
