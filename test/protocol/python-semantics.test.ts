/**
 * Python string semantics, held against CPython itself: generated Unicode-heavy input goes through
 * our parsers and through python_semantics_reference.py (the same rules on Python's own `str`,
 * `re`, `int`), and every answer must agree (docs/spa-protocol.md#python-text). Samples are drawn
 * with fixed seeds, so a run is deterministic; each property checks 600 inputs in one Python call.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SPA_ENV_PROMPT_SPECS } from '../../envs/protocol/action-vocabularies.js';
import { pyInt, pyIsDigit, pySplit, pyStrip } from '../../envs/protocol/internal/python-text.js';
import { parseResponse } from '../../envs/protocol/parser.js';
import type { PromptMode } from '../../envs/protocol/types.js';
import { parseSudokuAction } from '../../envs/sudoku/action-parser.js';
import type { EnvName } from '../../envs/types.js';

const SCRIPT = fileURLToPath(new URL('./python_semantics_reference.py', import.meta.url));
const RUNS = 600;

type Case =
  | { kind: 'parse'; text: string; mode: PromptMode; env: EnvName }
  | { kind: 'sudoku' | 'int' | 'text'; text: string };

function cpython(cases: readonly Case[]): unknown[] {
  const run = spawnSync('python3', [SCRIPT], { input: JSON.stringify(cases), encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`python3 ${SCRIPT} failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as unknown[];
}

/** Pieces Python and JS treat differently, mixed with what the parsers look for. */
const WHITESPACE = ['\t', '\n', '\x0b', '\x0c', '\r', '\x1c', '\x1f', ' ', '\x85', '\xa0', '\u1680'];
const MORE_SPACE = ['\u2000', '\u2028', '\u2029', '\u202f', '\u3000', '\ufeff', '\u200b', '\u180e'];
const DIGITS = ['1', '2', '3', '4', '0', '٣', '३', '３', '𝟑', '᧚', '²', '①', '⁴', '\u{11f53}', '\u{1e4f2}'];
const CASES = ['İ', 'K', 'ſ', 'Σ', 'ß', 'ǅ', 'Ⅻ', 'ﬀ'];
const WORDS = ['Up', 'up', 'UP', 'Down', 'LEFT', 'Right', 'row', 'ROW', 'col', 'Col', 'place', 'at'];
const MARKS = [',', '-', '_', '+', '||', ' || ', '.', 'x'];
const TAGS = ['<think>', '</think>', '<observation>', '</observation>', '<prediction>', '</prediction>'];
const MORE_TAGS = ['<answer>', '</answer>', '<|im_start|>', '<|im_end|>', '<ANSWER>'];

const piece = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...WHITESPACE, ...MORE_SPACE) },
  { weight: 3, arbitrary: fc.constantFrom(...DIGITS) },
  { weight: 2, arbitrary: fc.constantFrom(...WORDS, ...CASES) },
  { weight: 2, arbitrary: fc.constantFrom(...MARKS) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 3 }) },
);
const text = (maxLength: number) => fc.string({ unit: piece, maxLength });
const withTags = fc.string({
  unit: fc.oneof(
    { weight: 4, arbitrary: piece },
    { weight: 1, arbitrary: fc.constantFrom(...TAGS, ...MORE_TAGS) },
  ),
  maxLength: 30,
});
/** A response that matches the world-model pattern (or nearly), with noise in every slot. */
const shaped = fc
  .tuple(text(3), text(8), text(8), text(8), text(3), text(3), text(14), text(4))
  .map(
    ([lead, cur, think, next, gap, gap2, answer, tail]) =>
      `${lead}<observation>${cur}</observation>${think}<prediction>${next}</prediction>${gap}</think>${gap2}<answer>${answer}</answer>${tail}`,
  );
const sample = <T>(arbitrary: fc.Arbitrary<T>, seed: number): T[] =>
  fc.sample(arbitrary, { seed, numRuns: RUNS });

/** Python's big ints arrive as the nearest double; ours too, but maybe not the same one. */
const sameNumber = (ours: unknown, theirs: unknown) =>
  typeof ours === 'number' && typeof theirs === 'number' && !Number.isSafeInteger(theirs)
    ? Math.abs(ours - theirs) <= Math.abs(theirs) * 1e-12
    : Object.is(ours, theirs) || JSON.stringify(ours) === JSON.stringify(theirs);

describe('Python str semantics against CPython', () => {
  it('strip, split and isdigit', () => {
    const inputs = sample(text(12), 1);
    const theirs = cpython(inputs.map((t) => ({ kind: 'text', text: t }))) as {
      strip: string;
      split: string[];
      isdigit: boolean;
    }[];
    inputs.forEach((t, i) => {
      expect({ strip: pyStrip(t), split: pySplit(t), isdigit: pyIsDigit(t) }, JSON.stringify(t)).toEqual(
        theirs[i],
      );
    });
  });

  it('int()', () => {
    const numeric = fc.string({
      unit: fc.constantFrom(...DIGITS, '_', '-', '+', ' ', '\x85', '\u3000', 'x'),
      maxLength: 8,
    });
    const inputs = sample(numeric, 2);
    const theirs = cpython(inputs.map((t) => ({ kind: 'int', text: t })));
    inputs.forEach((t, i) =>
      expect(
        sameNumber(pyInt(t), theirs[i]),
        `${JSON.stringify(t)}: ${pyInt(t)} vs ${String(theirs[i])}`,
      ).toBe(true),
    );
  });
});

describe("SPA's parsers against CPython", () => {
  it('the Sudoku action parser (row/col phrases and r,c,v)', () => {
    const phrase = fc.oneof(
      text(10),
      fc.tuple(text(3), text(3), text(3)).map(([a, b, c]) => `place ${a} at row ${b} col ${c}`),
    );
    const inputs = sample(phrase, 3);
    const theirs = cpython(inputs.map((t) => ({ kind: 'sudoku', text: t }))) as (
      [number, number, number] | null
    )[];
    inputs.forEach((t, i) => {
      const move = parseSudokuAction(t);
      const ours = move === null ? null : [move.row, move.col, move.value];
      const expected = theirs[i] ?? null;
      const same =
        ours === null || expected === null
          ? ours === expected
          : ours.every((x, j) => sameNumber(x, expected[j]));
      expect(same, `${JSON.stringify(t)}: ${JSON.stringify(ours)} vs ${JSON.stringify(expected)}`).toBe(true);
    });
  });

  it.each<[PromptMode, EnvName]>([
    ['wm', 'sokoban'],
    ['wm', 'sudoku'],
    ['base', 'frozenlake'],
    ['base', 'sudoku'],
  ])('parseResponse in %s mode with the %s lookup', (mode, env) => {
    const inputs = sample(fc.oneof(withTags, shaped), mode === 'wm' ? 4 : 5);
    const theirs = cpython(inputs.map((t) => ({ kind: 'parse', text: t, mode, env }))) as Record<
      string,
      unknown
    >[];
    inputs.forEach((t, i) => {
      const r = parseResponse(t, { mode, env: SPA_ENV_PROMPT_SPECS[env], reproduceSpaFallbackBug: true });
      const ours: Record<string, unknown> = {
        matched: r.matched,
        actions: r.actions,
        valid: r.validActions,
        canonical: r.canonical,
      };
      if (mode === 'wm' && r.matched === 'strict')
        Object.assign(ours, { observation: r.observation, prediction: r.prediction });
      expect(ours, JSON.stringify(t)).toEqual(theirs[i]);
    });
  });
});
