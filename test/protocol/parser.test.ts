import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { freeTextLookup, tableLookup } from '../../envs/protocol/action-vocabularies.js';
import {
  historyText,
  parseResponse,
  type ParseMatch,
  type ParseRejection,
} from '../../envs/protocol/parser.js';
import type { ActionLookup } from '../../envs/protocol/types.js';

// Tiny local fakes: a Sokoban-like table (Up/Down/Left/Right = 1..4) and Sudoku's free text.
const sokobanLike: ActionLookup = { lookupAction: tableLookup(['Up', 'Down', 'Left', 'Right']) };
const frozenLakeLike: ActionLookup = { lookupAction: tableLookup(['Left', 'Down', 'Right', 'Up']) };
const sudokuLike: ActionLookup = { lookupAction: freeTextLookup };

interface Expected {
  readonly matched: ParseMatch;
  readonly actions: string[];
  readonly ids: number[];
  readonly penalty: boolean;
  readonly reason: ParseRejection | null;
  /**
   * Canonical text. Null for non-strict rows (SPA keeps the raw text); for strict rows null
   * means docs/spa-testvectors.md#parser does not list it (the parity fixture covers every row).
   */
  readonly canonical: string | null;
}

interface Row {
  readonly n: number;
  readonly continuation: string;
  readonly wm: Expected;
  readonly base: Expected;
}

const OBS = ' <observation>x</observation>';
const ok = (actions: string[], ids: number[], canonical: string | null): Expected => ({
  matched: 'strict',
  actions,
  ids,
  penalty: false,
  reason: null,
  canonical,
});
const bad = (
  matched: ParseMatch,
  actions: string[],
  ids: number[],
  reason: ParseRejection,
  canonical: string | null,
): Expected => ({ matched, actions, ids, penalty: true, reason, canonical });
const wmCanon = (think: string, answer: string) =>
  `<think> <observation>x</observation> ${think} <prediction>y</prediction></think><answer>${answer}</answer>`;

// docs/spa-testvectors.md#parser, all 19 rows (Sokoban lookup). WM canonical strings as listed there; the
// other strict rows follow the same rule (parts stripped, re-joined only when capped).
const ROWS: Row[] = [
  {
    n: 1,
    continuation: `${OBS} plan <prediction>y</prediction></think><answer>Right || Up || Left</answer>`,
    wm: ok(['Right', 'Up', 'Left'], [4, 1, 3], wmCanon('plan', 'Right || Up || Left')),
    base: ok(
      ['Right', 'Up', 'Left'],
      [4, 1, 3],
      '<think><observation>x</observation> plan <prediction>y</prediction></think><answer>Right || Up || Left</answer>',
    ),
  },
  {
    n: 2,
    continuation:
      '\n<observation>\nx\n</observation>\nplan\n<prediction>\ny\n</prediction>\n</think>\n<answer>\nDown\n</answer>',
    wm: ok(['Down'], [2], wmCanon('plan', 'Down')),
    base: ok(['Down'], [2], null),
  },
  {
    n: 3,
    continuation: `${OBS} <prediction>y</prediction></think><answer>up || left</answer>`,
    wm: ok(['up', 'left'], [1, 3], wmCanon('', 'up || left')),
    base: ok(['up', 'left'], [1, 3], null),
  },
  {
    n: 4,
    continuation: `${OBS} <prediction>y</prediction></think><answer>Up||Up||Up||Up||Up||Left||Left</answer>`,
    wm: ok(['Up', 'Up', 'Up', 'Up', 'Up'], [1, 1, 1, 1, 1], wmCanon('', 'Up || Up || Up || Up || Up')),
    base: ok(['Up', 'Up', 'Up', 'Up', 'Up'], [1, 1, 1, 1, 1], null),
  },
  {
    n: 5,
    continuation: `${OBS} <prediction>y</prediction></think><answer>Up || Jump || Left</answer>`,
    wm: bad('strict', ['Up', 'Jump', 'Left'], [1, 3], 'unknown-action', wmCanon('', 'Up || Jump || Left')),
    base: bad('strict', ['Up', 'Jump', 'Left'], [1, 3], 'unknown-action', null),
  },
  {
    n: 6,
    continuation: `${OBS} <prediction>y</prediction></think><answer>Up, Left</answer>`,
    wm: bad('strict', ['Up, Left'], [], 'unknown-action', wmCanon('', 'Up, Left')),
    base: bad('strict', ['Up, Left'], [], 'unknown-action', null),
  },
  {
    n: 7,
    continuation: `${OBS} <prediction>y</prediction></think><answer>Up | Left</answer>`,
    wm: bad('strict', ['Up | Left'], [], 'unknown-action', wmCanon('', 'Up | Left')),
    base: bad('strict', ['Up | Left'], [], 'unknown-action', null),
  },
  {
    n: 8,
    continuation: 'I will push up.</think><answer>Up</answer>',
    wm: bad('fallback', [], [], 'answer-only', null),
    base: ok(['Up'], [1], '<think>I will push up.</think><answer>Up</answer>'),
  },
  {
    n: 9,
    continuation: ' <prediction>y</prediction> <observation>x</observation></think><answer>Up</answer>',
    wm: bad('fallback', [], [], 'answer-only', null),
    base: ok(
      ['Up'],
      [1],
      '<think><prediction>y</prediction> <observation>x</observation></think><answer>Up</answer>',
    ),
  },
  {
    n: 10,
    continuation: `${OBS} <prediction>y</prediction> then done</think><answer>Up</answer>`,
    wm: bad('fallback', [], [], 'answer-only', null),
    base: ok(['Up'], [1], null),
  },
  {
    n: 11,
    continuation: `${OBS} <prediction>y</prediction> <answer>Up</answer>`,
    wm: bad('fallback', [], [], 'answer-only', null),
    base: bad('none', [], [], 'no-format-match', null),
  },
  {
    n: 12,
    continuation: `${OBS}</think><answer>Up ||\nLeft</answer>`,
    wm: bad('none', [], [], 'no-format-match', null),
    base: ok(
      ['Up', 'Left'],
      [1, 3],
      '<think><observation>x</observation></think><answer>Up ||\nLeft</answer>',
    ),
  },
  {
    n: 13,
    continuation: `${OBS} <prediction>y</prediction></think> Up`,
    wm: bad('none', [], [], 'no-format-match', null),
    base: bad('none', [], [], 'no-format-match', null),
  },
  {
    n: 14,
    continuation: `${OBS} <prediction>y</prediction></think><answer></answer>`,
    wm: bad('strict', [], [], 'empty-answer', wmCanon('', '')),
    base: bad('strict', [], [], 'empty-answer', null),
  },
  {
    n: 15,
    continuation: `${OBS} <prediction>y</prediction></think><answer>Left</answer> extra words`,
    wm: ok(['Left'], [3], wmCanon('', 'Left')),
    base: ok(['Left'], [3], null),
  },
  {
    n: 16,
    continuation: `${OBS} <prediction>y</prediction></think><answer><answer>Down</answer></answer>`,
    wm: ok(['Down'], [2], wmCanon('', 'Down')),
    base: ok(['Down'], [2], null),
  },
  {
    n: 17,
    continuation:
      '<think> <observation>x</observation> t <prediction>y</prediction></think><answer>Up.</answer>',
    wm: bad('strict', ['Up.'], [], 'unknown-action', wmCanon('t', 'Up.')),
    base: bad(
      'strict',
      ['Up.'],
      [],
      'unknown-action',
      '<think><observation>x</observation> t <prediction>y</prediction></think><answer>Up.</answer>',
    ),
  },
  {
    n: 18,
    continuation: `${OBS} t <prediction>y</prediction></think><answer>Move Up || DOWN</answer>`,
    wm: bad('strict', ['Move Up', 'DOWN'], [2], 'unknown-action', wmCanon('t', 'Move Up || DOWN')),
    base: bad('strict', ['Move Up', 'DOWN'], [2], 'unknown-action', null),
  },
  {
    n: 19,
    continuation: `${OBS} t <prediction>y</prediction></think>   \n <answer> Right||Down </answer>`,
    wm: ok(['Right', 'Down'], [4, 2], wmCanon('t', 'Right||Down')),
    base: ok(['Right', 'Down'], [4, 2], null),
  },
];

function check(row: Row, mode: 'wm' | 'base') {
  const expected = row[mode];
  const result = parseResponse(row.continuation, { mode, env: sokobanLike });
  expect(result.matched).toBe(expected.matched);
  expect(result.actions).toEqual(expected.actions);
  expect(result.validActions).toEqual(expected.ids);
  expect(result.penalty).toBe(expected.penalty);
  expect(result.reason).toBe(expected.reason);
  expect(result.ok).toBe(expected.matched === 'strict' && !expected.penalty);
  expect(result.raw).toBe(`<think>${row.continuation}`);
  if (expected.matched !== 'strict') expect(result.canonical).toBeNull();
  else if (expected.canonical !== null) expect(result.canonical).toBe(expected.canonical);
  expect(historyText(result)).toBe(result.canonical ?? `<think>${row.continuation}`);
}

describe('parseResponse: docs/spa-testvectors.md#parser (Sokoban lookup)', () => {
  it.each(ROWS)('row $n, world-model parser', (row) => check(row, 'wm'));
  it.each(ROWS)('row $n, base parser', (row) => check(row, 'base'));

  it('exposes the stripped observation and prediction of a strict world-model match', () => {
    const result = parseResponse(ROWS[1]!.continuation, { mode: 'wm', env: sokobanLike });
    expect([result.observation, result.prediction]).toEqual(['x', 'y']);
    expect(parseResponse(ROWS[7]!.continuation, { mode: 'wm', env: sokobanLike }).observation).toBeNull();
  });

  it('maps through the env table, so FrozenLake ids differ', () => {
    expect(parseResponse(ROWS[0]!.continuation, { mode: 'wm', env: frozenLakeLike }).validActions).toEqual([
      3, 4, 1,
    ]);
  });

  it('honours a different max_actions_per_turn', () => {
    const result = parseResponse(ROWS[0]!.continuation, {
      mode: 'wm',
      env: sokobanLike,
      maxActionsPerTurn: 2,
    });
    expect(result.actions).toEqual(['Right', 'Up']);
    expect(result.canonical).toBe(wmCanon('plan', 'Right || Up'));
  });
});

describe('the SPA fallback bug (docs/spa-testvectors.md#parser, Sudoku; #env-manager, last row)', () => {
  const continuation = 'Fill two cells.</think><answer>2,1,1 || 2,3,2</answer>';
  const chars = ['2', ',', '1', ',', '1', ' ', '|', '|', ' ', '2', ',', '3', ',', '2'];

  it('by default treats a fallback match as a format error with no actions', () => {
    const result = parseResponse(continuation, { mode: 'wm', env: sudokuLike });
    expect(result).toMatchObject({
      matched: 'fallback',
      ok: false,
      actions: [],
      validActions: [],
      penalty: true,
    });
    expect(result.reason).toBe('answer-only');
  });

  it('with the flag, Sudoku gets one action per character and no penalty', () => {
    const result = parseResponse(continuation, {
      mode: 'wm',
      env: sudokuLike,
      reproduceSpaFallbackBug: true,
    });
    expect(result.actions).toEqual(chars);
    expect(result.validActions).toEqual(chars);
    expect(result.validActions).toHaveLength(14);
    expect(result).toMatchObject({ matched: 'fallback', ok: false, penalty: false, canonical: null });
  });

  it('with the flag, table envs map no character and are penalised', () => {
    const result = parseResponse('x</think><answer>Up</answer>', {
      mode: 'wm',
      env: sokobanLike,
      reproduceSpaFallbackBug: true,
    });
    expect(result).toMatchObject({
      actions: ['U', 'p'],
      validActions: [],
      penalty: true,
      reason: 'answer-only',
    });
  });

  it('with the flag, an empty fallback answer is penalised even for Sudoku', () => {
    const result = parseResponse('x</think><answer></answer>', {
      mode: 'wm',
      env: sudokuLike,
      reproduceSpaFallbackBug: true,
    });
    expect(result).toMatchObject({ actions: [], penalty: true });
  });

  it('the fallback only looks at single-line answers (no DOTALL)', () => {
    const result = parseResponse('x</think><answer>Up\n</answer>', { mode: 'wm', env: sokobanLike });
    expect(result.matched).toBe('none');
  });
});

describe('parseResponse never throws and keeps its invariants', () => {
  const fragment = fc.oneof(
    fc.constantFrom(
      '<think>',
      '</think>',
      '<observation>',
      '</observation>',
      '<prediction>',
      '</prediction>',
      '<answer>',
      '</answer>',
      '<|im_start|>',
      '<|im_end|>',
      '||',
      'Up',
      'left',
      ' ',
      '\n',
      '\u2028',
      '\x85',
    ),
    fc.string({ unit: 'binary', maxLength: 6 }),
  );
  const response = fc.array(fragment, { maxLength: 24 }).map((parts) => parts.join(''));

  it('for arbitrary strings with tags, in both modes, with and without the bug flag', () => {
    fc.assert(
      fc.property(
        response,
        fc.constantFrom('wm' as const, 'base' as const),
        fc.boolean(),
        (text, mode, bug) => {
          for (const env of [sokobanLike, sudokuLike]) {
            const result = parseResponse(text, { mode, env, reproduceSpaFallbackBug: bug });
            expect(result.raw).toBe(`<think>${text}`);
            expect(result.ok).toBe(result.matched === 'strict' && !result.penalty);
            expect(result.reason === null).toBe(result.ok);
            expect(result.canonical !== null).toBe(result.matched === 'strict');
            expect(result.validActions.length).toBeLessThanOrEqual(result.actions.length);
            if (result.matched === 'strict') {
              expect(result.actions.length).toBeLessThanOrEqual(5);
              for (const action of result.actions) {
                expect(action.length).toBeGreaterThan(0);
                expect(action).not.toContain('||');
              }
            }
            if (mode === 'base') expect(result.matched).not.toBe('fallback');
          }
        },
      ),
      { numRuns: 400 },
    );
  });
});
