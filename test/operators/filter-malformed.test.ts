import { lastValueFrom, of, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { filterMalformed, isWellFormedWorldModelResponse } from '../../operators/filter-malformed.js';
import { toTrajectory } from '../../operators/to-trajectory.js';
import { step } from './fixtures.js';

describe('isWellFormedWorldModelResponse (testcases §6.4)', () => {
  it.each([
    ['<think> <observation>a</observation> t <prediction>b</prediction></think><answer>Up</answer>', true],
    ['<THINK><Observation>a</Observation><prediction>b</prediction></THINK><ANSWER>x</ANSWER>', true],
    ['<think>I go up</think><answer>Up</answer>', false],
    ['<think><prediction>b</prediction><observation>a</observation></think><answer>Up</answer>', false],
    ['<answer>Up</answer><think><observation>a</observation><prediction>b</prediction></think>', false],
    ['<think><observation>a</observation><prediction>b</prediction></think>', false],
  ])('%j → %s', (response, keep) => {
    expect(isWellFormedWorldModelResponse(response)).toBe(keep);
  });
});

describe('filterMalformed', () => {
  it('accepts well-formed trajectories and rejects the rest with the first bad turn as reason', async () => {
    const bad = '<think>I go up</think><answer>Up</answer>';
    const good = await lastValueFrom(of(step('g/m0', 1, true)).pipe(toTrajectory(() => 0)));
    const structurallyBad = await lastValueFrom(
      of(step('g/m1', 1, false), step('g/m1', 2, true, { llmResponse: bad })).pipe(toTrajectory(() => 0)),
    );
    const parseFailed = await lastValueFrom(
      of(
        step('g/m2', 1, true, {
          parse: { ...step('x', 1, true).parse, ok: false, matched: 'fallback', reason: 'answer-only' },
        }),
      ).pipe(toTrajectory(() => 0)),
    );
    const verdicts = await lastValueFrom(
      of(good, structurallyBad, parseFailed).pipe(filterMalformed(), toArray()),
    );
    expect(verdicts.map((v) => v.accepted)).toEqual([true, false, false]);
    expect(verdicts[1]).toMatchObject({
      rejection: { key: 'g/m1', reason: 'malformed-turn', source: 'filterMalformed' },
    });
    expect(verdicts[1]!.accepted ? '' : verdicts[1]!.rejection.detail).toContain('turn 1');
    expect(verdicts[2]).toMatchObject({ rejection: { key: 'g/m2', reason: 'answer-only' } });
  });
});
