import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { freeTextLookup, tableLookup } from '../../envs/protocol/action-vocabularies.js';
import { historyText, parseResponse } from '../../envs/protocol/parser.js';
import type { ActionLookup, PromptMode } from '../../envs/protocol/types.js';

/** What CPython's `re`/`str` made of one response (fixtures/generate.py, docs/spa-protocol.md#parser). */
interface PythonParse {
  readonly matched: 'strict' | 'fallback' | 'none';
  readonly llm_response: string;
  readonly actions: string[];
  readonly fallback_answer?: string;
  readonly sokoban: [number[], boolean];
  readonly sudoku: [string[], boolean];
  readonly bug_sokoban?: [number[], boolean];
  readonly bug_sudoku?: [string[], boolean];
}

interface ParityCase {
  readonly continuation: string;
  readonly wm: PythonParse;
  readonly base: PythonParse;
}

const fixture = JSON.parse(
  readFileSync(new URL('./fixtures/parser-parity.json', import.meta.url), 'utf8'),
) as { python: string; cases: ParityCase[] };

const envs: Record<'sokoban' | 'sudoku', ActionLookup> = {
  sokoban: { lookupAction: tableLookup(['Up', 'Down', 'Left', 'Right']) },
  sudoku: { lookupAction: freeTextLookup },
};

/** Our result in the fixture's shape, so a mismatch shows the whole difference at once. */
function ours(continuation: string, mode: PromptMode): PythonParse {
  const sokoban = parseResponse(continuation, { mode, env: envs.sokoban });
  const sudoku = parseResponse(continuation, { mode, env: envs.sudoku });
  const shape: PythonParse = {
    matched: sokoban.matched,
    llm_response: historyText(sokoban),
    actions: sokoban.actions,
    sokoban: [sokoban.validActions as number[], sokoban.penalty],
    sudoku: [sudoku.validActions as string[], sudoku.penalty],
  };
  if (sokoban.matched !== 'fallback') return shape;
  const bug = (env: 'sokoban' | 'sudoku') =>
    parseResponse(continuation, { mode, env: envs[env], reproduceSpaFallbackBug: true });
  return {
    ...shape,
    fallback_answer: bug('sudoku').actions.join(''),
    bug_sokoban: [bug('sokoban').validActions as number[], bug('sokoban').penalty],
    bug_sudoku: [bug('sudoku').validActions as string[], bug('sudoku').penalty],
  };
}

describe(`parser parity with CPython ${fixture.python} re/str on ${fixture.cases.length} generated responses`, () => {
  it.each(['wm', 'base'] as const)(
    '%s parser: matched, llm_response, actions, ids and penalty agree',
    (mode) => {
      const mismatches = fixture.cases
        .map((c) => ({ continuation: c.continuation, python: c[mode], ours: ours(c.continuation, mode) }))
        .filter(({ python, ours: mine }) => !isDeepStrictEqual(python, mine));
      expect(mismatches).toEqual([]);
    },
  );

  it('covers every outcome', () => {
    const outcomes = new Set(fixture.cases.flatMap((c) => [`wm:${c.wm.matched}`, `base:${c.base.matched}`]));
    expect([...outcomes].sort()).toEqual(['base:none', 'base:strict', 'wm:fallback', 'wm:none', 'wm:strict']);
  });
});
