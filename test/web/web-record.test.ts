import { describe, expect, it } from 'vitest';
import type { Trajectory, Turn } from '../../schemas/index.js';
import type { Outbound } from '../../schemas/outbound.js';
import { decodeAnySpaRecord } from '../../streams/kafka/consume-spa-decode.js';
import { toKafkaRecord } from '../../streams/kafka/spa-records.js';
import { toRejected } from '../../streams/sft-outputs.js';
import { toWebRecord, type WebRecord } from '../../web/server/web-record.js';

// docs/spa-testvectors.md#sokoban-episode, turn 1: a right observation and a wrong prediction (player at
// (3,2)).
const before =
  '######\n#O####\n#__###\n#X_###\n#_P_##\n######\nPlayer (P) is at (4,2); box (X) is at (3,1); target (O) is at (1,1).';
const after =
  '######\n#O####\n#X_###\n#P_###\n#___##\n######\nPlayer (P) is at (3,1); box (X) is at (2,1); target (O) is at (1,1).';
const response = `<think> <observation>${before}</observation> The box is up-left. Go Left, then push Up. <prediction>######\n#O####\n#X_###\n#_P###\n#___##\n######</prediction> </think> <answer>Left || Up</answer>`;

const turn: Turn = {
  turn: 0,
  state: before,
  response_raw: response,
  llm_response: response,
  parse: { matched: 'strict', ok: true, reason: null, actions: ['Left', 'Up'], penalty: false },
  executed: ['Left', 'Up'],
  rewards: [-0.1, -0.1],
  reward_text: '-0.2',
  state_after: after,
  done: false,
};

const trajectory: Trajectory = {
  trajectory_id: 'r/train/b0/g0/m0',
  group_id: 'r/train/b0/g0',
  env: 'sokoban',
  variant: '6x6-1box',
  seed: 10000,
  slot: 0,
  split: 'train',
  mode: 'wm',
  policy: 'test',
  policy_version: 2,
  messages: [],
  turns: [turn],
  states: [before, after],
  success: false,
  total_reward: -0.2,
  penalty: 0,
  num_actions: 2,
  created_at: 1_700_000_000_000,
};

/** Encodes like the generator, reads back like a consumer, and converts for the page. */
function roundTrip(outbound: Outbound): WebRecord {
  const produced = toKafkaRecord(outbound, `spa.${outbound.topic}`);
  return toWebRecord(
    decodeAnySpaRecord({
      topic: produced.topic,
      partition: 2,
      offset: 41n,
      key: produced.key,
      value: produced.value,
      headers: produced.headers ?? {},
      timestamp: 1_700_000_000_500,
    }),
  );
}

describe('toWebRecord', () => {
  it("puts the model's observation and prediction beside the true boards, marking differing cells", () => {
    const web = roundTrip({ topic: 'trajectories', key: trajectory.trajectory_id, record: trajectory });
    if (web.kind !== 'Trajectory') throw new Error(`expected a Trajectory, got ${web.kind}`);
    expect(web.source).toEqual({
      topic: 'spa.trajectories',
      partition: 2,
      offset: '41',
      timestamp: 1_700_000_000_500,
      key: trajectory.trajectory_id,
    });
    const [t] = web.trajectory.turns;
    expect(t!.before.rows[4]).toEqual(['#', '_', 'P', '_', '#', '#']);
    expect(t!.believedBefore!.differs).toEqual([]);
    expect(t!.believedAfter!.differs).toEqual([
      [3, 1],
      [3, 2],
    ]);
    expect(t!.after.caption).toContain('Player (P) is at (3,1)');
    expect(t!.parse.actions).toEqual(['Left', 'Up']);
    // The page gets JSON: nothing in the record may need a custom serializer.
    expect(JSON.parse(JSON.stringify(web))).toEqual(web);
  });

  it('shows "not written" (null) when the response has no observation/prediction', () => {
    const bare = { ...turn, response_raw: '<think>hm</think><answer>Up</answer>' };
    const web = roundTrip({
      topic: 'trajectories',
      key: 'k',
      record: { ...trajectory, turns: [bare] },
    });
    if (web.kind !== 'Trajectory') throw new Error(web.kind);
    expect(web.trajectory.turns[0]!.believedBefore).toBeNull();
    expect(web.trajectory.turns[0]!.believedAfter).toBeNull();
  });

  it("opens a filter reject's JSON payload as the rejected trajectory", () => {
    const rejected = toRejected(
      {
        key: trajectory.trajectory_id,
        source: 'filterMalformed',
        reason: 'no-format-match',
        detail: 'turn 0: parser none match, not ok (no-format-match)',
        value: trajectory,
      },
      1_700_000_000_000,
    );
    const web = roundTrip({ topic: 'dlq', key: trajectory.trajectory_id, record: rejected });
    if (web.kind !== 'Rejected') throw new Error(web.kind);
    expect(web.rejected.reason).toBe('no-format-match');
    expect(web.payloadBytes).toBe(rejected.payload.length);
    expect(web.payloadTrajectory?.trajectoryId).toBe(trajectory.trajectory_id);
    expect(web.payloadTrajectory?.turns[0]!.believedAfter!.differs).toHaveLength(2);
  });

  it("shows a filter reject's row payload: env, turn and the refused response", () => {
    const row = {
      env: 'frozenlake',
      turn: 2,
      response: '<think>hm</think><answer>Up</answer>',
      trajectory_id: 't',
    };
    const rejected = toRejected(
      { key: 't', source: 'filterMalformed', reason: 'malformed-turn', detail: 'turn 2: …', value: row },
      1_700_000_000_000,
    );
    const web = roundTrip({ topic: 'dlq', key: 't', record: rejected });
    if (web.kind !== 'Rejected') throw new Error(web.kind);
    expect(web.payloadRow).toEqual({ env: 'frozenlake', turn: 2, response: row.response });
    expect(web.payloadTrajectory).toBeNull();
  });

  it('turns bytes no schema wrote into an Undecodable record with the reason', () => {
    const web = toWebRecord(
      decodeAnySpaRecord({
        topic: 'spa.sft',
        partition: 0,
        offset: 3n,
        key: null,
        value: Buffer.from('garbage'),
        headers: {},
        timestamp: 0,
      }),
    );
    if (web.kind !== 'Undecodable') throw new Error(web.kind);
    expect(web.rejected.reason).toBe('bad-magic');
    expect(web.payloadTrajectory).toBeNull();
    expect(web.payloadRow).toBeNull();
    expect(web.source.key).toBeNull();
  });
});
