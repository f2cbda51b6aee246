/**
 * Odd records for the web tap's tests (issue 33 item 1): the dead letter that ended
 * `spa tap --web` for good, a valid `Rejected` whose JSON payload looks like a trajectory
 * with an empty turn.
 */
import type { Rejected } from '../../schemas/index.js';
import { toKafkaRecord } from '../../streams/kafka/spa-records.js';
import type { OutgoingRecord } from '../../infra/kafka/client/transport.js';

/** The payload from the issue: `trajectory_id` and `turns` are there, the turn is empty. */
export const EVIL_PAYLOAD = '{"trajectory_id":"evil","turns":[{}]}';

/** The dead letter itself: schema-valid, key `evil`. */
export const evilRejected: Rejected = {
  key: 'evil',
  source: 'hostile',
  reason: 'bad-row',
  detail: 'a dead letter whose payload looks like a trajectory',
  payload: Buffer.from(EVIL_PAYLOAD),
  payload_fingerprint: null,
  created_at: 1_700_000_000_000,
};

/** {@link evilRejected} as a record for `topic`. */
export const evilDeadLetter = (topic: string): OutgoingRecord =>
  toKafkaRecord({ topic: 'dlq', key: 'evil', record: evilRejected }, topic);
