import { lastValueFrom, of, toArray } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { EnvName } from '../../envs/types.js';
import { annotateGroundTruth } from '../../operators/annotate-ground-truth.js';
import {
  filterMalformedRows,
  isWellFormedWorldModelResponse,
  SPA_MALFORMED_FILTER,
  type MalformedFilter,
} from '../../operators/filter-malformed.js';
import { toTrajectory } from '../../operators/to-trajectory.js';
import type { SftRow } from '../../schemas/index.js';
import type { StepRecord } from '../../schemas/step-record.js';
import { toSftOutputs } from '../../streams/sft-outputs.js';
import { step } from './fixtures.js';

describe('isWellFormedWorldModelResponse (SPA is_good_response)', () => {
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

const BAD = '<think>I go up</think><answer>Up</answer>';
const answerOnly = {
  ...step('x', 1, true).parse,
  ok: false,
  matched: 'fallback' as const,
  reason: 'answer-only' as const,
};

/** A three-turn trajectory of `env` whose middle turn is `middle`. */
function trajectory(env: EnvName, middle: Partial<StepRecord>) {
  return of(
    step('g/m0', 1, false, { env }),
    step('g/m0', 2, false, { env, ...middle }),
    step('g/m0', 3, true, { env }),
  ).pipe(
    toTrajectory(() => 0),
    annotateGroundTruth(),
  );
}

async function verdicts(env: EnvName, middle: Partial<StepRecord>, filter: MalformedFilter) {
  return lastValueFrom(
    trajectory(env, middle).pipe(filterMalformedRows(filter, { maskTransitions: false }), toArray()),
  );
}

describe('filterMalformedRows', () => {
  it('rejects only the bad row of a filtered env; later rows keep the bad turn in their prompt', async () => {
    const out = await verdicts('frozenlake', { llmResponse: BAD }, SPA_MALFORMED_FILTER);
    expect(out.map((v) => v.accepted)).toEqual([true, false, true]);
    const rejected = out[1]!;
    if (rejected.accepted) throw new Error('turn 1 accepted');
    expect(rejected.rejection).toMatchObject({
      key: 'g/m0',
      reason: 'malformed-turn',
      source: 'filterMalformed',
    });
    expect(rejected.rejection.detail).toContain('turn 1');
    expect(rejected.rejection.value.turn).toBe(1);
    const last = out[2]!;
    if (!last.accepted) throw new Error('turn 2 rejected');
    expect(last.value.prompt.map((m) => m.content)).toContain(BAD);
  });

  it('does not filter Sokoban rows by default, as SPA', async () => {
    const out = await verdicts('sokoban', { llmResponse: BAD }, SPA_MALFORMED_FILTER);
    expect(out.map((v) => v.accepted)).toEqual([true, true, true]);
    const strictSokoban = await verdicts(
      'sokoban',
      { llmResponse: BAD },
      { envs: ['sokoban'], parserReasons: false },
    );
    expect(strictSokoban.map((v) => v.accepted)).toEqual([true, false, true]);
  });

  it("rejects on the parser's reasons only when asked (a named option, off by default)", async () => {
    const spa = await verdicts('sudoku', { parse: answerOnly }, SPA_MALFORMED_FILTER);
    expect(spa.map((v) => v.accepted)).toEqual([true, true, true]);
    const strict = await verdicts(
      'sudoku',
      { parse: answerOnly },
      { ...SPA_MALFORMED_FILTER, parserReasons: true },
    );
    expect(strict.map((v) => v.accepted)).toEqual([true, false, true]);
    expect(strict[1]).toMatchObject({ rejection: { reason: 'answer-only' } });
  });
});

describe('toSftOutputs', () => {
  it('sends each rejected row to the DLQ with its reason and the row as payload', async () => {
    const outputs = await lastValueFrom(
      of(
        step('g/m0', 1, false, { env: 'frozenlake' }),
        step('g/m0', 2, true, { env: 'frozenlake', llmResponse: BAD }),
      ).pipe(
        toTrajectory(() => 0),
        toSftOutputs(
          { annotation: 'gt', maskTransitions: false, malformedFilter: SPA_MALFORMED_FILTER },
          () => 42,
        ),
        toArray(),
      ),
    );
    expect(outputs.map((o) => o.topic)).toEqual(['sft', 'dlq']);
    const dead = outputs[1]!;
    if (dead.topic !== 'dlq') throw new Error(dead.topic);
    expect(dead.record).toMatchObject({ key: 'g/m0', reason: 'malformed-turn', created_at: 42 });
    const row = JSON.parse(dead.record.payload.toString('utf8')) as SftRow;
    expect(row).toMatchObject({ trajectory_id: 'g/m0', turn: 1, response: BAD });
  });
});
