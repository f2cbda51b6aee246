/**
 * Schema evolution through a real broker: SftRows written with the older schema
 * (schemas/history/SftRow.v0.avsc, no `annotation`/`mask_transitions`) sit on a topic beside
 * current ones, and the current reader decodes both — old rows with the new fields' defaults.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastValueFrom, map, toArray } from 'rxjs';
import { encodeWith, fingerprintHex, spaSchemas, type SftRow } from '../../schemas/index.js';
import { decodeAnySpaRecord } from '../../streams/kafka/consume-spa-decode.js';
import { readTopic, type KafkaConnection } from '../../streams/kafka/consume-spa.js';
import { encodeSpaHeaders } from '../../streams/kafka/headers.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import { toKafkaRecord } from '../../streams/kafka/spa-records.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import { startTestBroker, stopTestBroker, testConnection } from './harness.js';

const ports = { port: 19440, controllerPort: 19441 };
let brokers: readonly string[];

beforeAll(async () => {
  brokers = (await startTestBroker('evolution', ports)).brokers;
});

afterAll(async () => {
  await stopTestBroker('evolution', ports);
});

/** A row of the old shape (v0 has neither `annotation` nor `mask_transitions`). */
function oldRow(turn: number): Omit<SftRow, 'annotation' | 'mask_transitions'> {
  return {
    data_source: 'sokoban',
    prompt: [
      { role: 'system', content: "You're a helpful assistant. " },
      { role: 'user', content: `Turn ${turn + 1}:\nState:\n######\n#P_O_#\n######` },
    ],
    response: `<think> <observation>#P_O_#</observation> go <prediction>#_PO_#</prediction></think><answer>Right</answer>`,
    ability: 'bfs',
    reward_model: "{'ground_truth': {'numbers': array([0, 0]), 'target': 0}, 'style': 'rule'}",
    extra_info: `{'index': ${10000 + turn}, 'split': 'train'}`,
    trajectory_id: `old/${turn}`,
    turn,
    env: 'sokoban',
    policy_version: 3,
  };
}

describe('SftRow written with the v0 schema', () => {
  const topic = 'evolution.sft';
  let kafka: KafkaConnection;

  beforeAll(async () => {
    const config = testConnection(brokers);
    await applyTopicsTo(brokers, [
      { role: 'sft', name: topic, partitions: 1, replicationFactor: 1, configs: {} },
    ]);
    kafka = { transport: kafkaTransport(config), config };
  });

  afterAll(async () => {
    await kafka?.transport.close();
  });

  it('replays through the current reader with defaults filled, beside current rows', async () => {
    const schemas = spaSchemas();
    const [v0] = schemas.versions('SftRow');
    const current = schemas.current('SftRow');
    expect(v0 && v0.version < current.version).toBe(true);
    const old = [oldRow(0), oldRow(1)];
    const now: SftRow = {
      ...oldRow(2),
      trajectory_id: 'new/2',
      annotation: 'self-belief',
      mask_transitions: true,
    };
    const sink = await kafka.transport.sink();
    await sink.send([
      ...old.map((row) => ({
        topic,
        key: Buffer.from(row.trajectory_id),
        value: encodeWith(v0!, row),
        headers: encodeSpaHeaders({ schemaFingerprint: fingerprintHex(v0!.fingerprint), policyVersion: 3 }),
      })),
      toKafkaRecord({ topic: 'sft', key: now.trajectory_id, record: now }, topic),
    ]);
    await sink.close();

    const read = await readTopic(kafka, { topic, start: { kind: 'earliest' } });
    const decoded = await lastValueFrom(
      read.records.pipe(
        map(({ record, ack }) => (ack(), decodeAnySpaRecord(record))),
        toArray(),
      ),
    );
    await read.closed;
    expect(decoded.map((d) => d.ok && d.value.type)).toEqual(['SftRow', 'SftRow', 'SftRow']);
    const rows = decoded.map((d) => (d.ok ? (d.value.record as SftRow) : undefined));
    expect(rows[0]).toEqual({ ...old[0], annotation: 'gt', mask_transitions: false });
    expect(rows[1]).toEqual({ ...old[1], annotation: 'gt', mask_transitions: false });
    expect(rows[2]).toEqual(now);
    // The header still says which schema wrote each frame.
    expect(decoded[0]?.source.value?.subarray(2, 10)).toEqual(v0!.fingerprint);
    expect(decoded[2]?.source.value?.subarray(2, 10)).toEqual(current.fingerprint);
  });
});
