import type { ParseResult } from '../../envs/protocol/index.js';
import type { StepRecord } from '../../schemas/step-record.js';

const okParse: ParseResult = {
  matched: 'strict',
  ok: true,
  actions: ['Up'],
  validActions: [1],
  penalty: false,
  canonical: null,
  reason: null,
  raw: '',
  observation: null,
  prediction: null,
};

/** A minimal StepRecord for operator tests; `turn` is 1-based. */
export function step(
  trajectoryId: string,
  turn: number,
  final: boolean,
  over: Partial<StepRecord> = {},
): StepRecord {
  const response = `<think> <observation>guess${turn}</observation> t <prediction>next${turn}</prediction></think><answer>Up</answer>`;
  return {
    runId: 'r',
    trajectoryId,
    groupId: trajectoryId.replace(/\/m\d+$/, ''),
    env: 'sokoban',
    variant: '6x6-1box',
    seed: 10000,
    slot: 0,
    split: 'train',
    mode: 'wm',
    policy: 'test',
    policyVersion: 3,
    turn,
    state: `S${turn - 1}`,
    actionsLeft: 10 - (turn - 1),
    responseRaw: response,
    parse: { ...okParse, raw: response, canonical: response },
    llmResponse: response,
    executed: ['Up'],
    rewards: [-0.1],
    rewardText: '-0.1',
    stateAfter: `S${turn}`,
    penalty: 0,
    done: final,
    success: false,
    final,
    prefix: 'PREFIX',
    ...over,
  };
}
