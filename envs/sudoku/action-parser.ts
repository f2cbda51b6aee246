import { pyInt, pyIsDigit, pySplit, pyStrip } from '../protocol/internal/python-text.js';
/** A parsed Sudoku move: zero-indexed row and column, the digit as written (not yet range-checked). */
export interface SudokuMove {
  readonly row: number;
  readonly col: number;
  readonly value: number;
}

function pythonInt(token: string | undefined): number | null {
  return token === undefined ? null : pyInt(token);
}

/**
 * RAGEN `SudokuEnv._parse_action` (mll-lab-nu/RAGEN `ragen/env/sudoku/env.py`,
 * docs/spa-protocol.md#sudoku), reproduced token by token with Python's string semantics
 * (`lower`, `strip`, `split`, `isdigit`, `int`: internal/python-text.ts); returns null where
 * Python returns a tuple holding None or raises.
 *
 * - Lower-case and trim; commas count as spaces; split on whitespace.
 * - If the text contains the substrings `row` and `col`: the tokens right after the whole tokens
 *   `row` and `col` are the 1-indexed row and column, the value is the first other all-digit
 *   token (`"place 3 at row 2 col 1"`). No whole `row`/`col` token, nothing after it, or no value
 *   ⇒ null (Python raises and catches, or leaves the value None); it does not fall back.
 * - Otherwise the first three tokens must each be digits with optional leading `-`
 *   (`"r,c,v"`, `"r c v"`, extra tokens ignored).
 *
 * Python's `isdigit`/`int` accept digits of every script (`"٣"` is 3), and `isdigit` also
 * superscripts that `int` then refuses (`"²"`: Python raises, so null).
 */
export function parseSudokuAction(action: string): SudokuMove | null {
  const fast = parsePlainMove(action);
  return fast === undefined ? parseSudokuActionTokens(action) : fast;
}

/**
 * The general path of {@link parseSudokuAction}, for every input: RAGEN's steps token by token.
 * `parseSudokuAction` gives the same answer for every string (it only skips this for the common
 * digits/commas/spaces shape); exported so tests can hold the two against each other.
 */
export function parseSudokuActionTokens(action: string): SudokuMove | null {
  // JS `toLowerCase` = Python `lower` but on characters newer than Python 3.11's Unicode,
  // none of which lowercases to ASCII (docs/spa-protocol.md#python-text).
  const text = pyStrip(action.toLowerCase());
  const parts = pySplit(text.replace(/,/g, ' '));
  if (text.includes('row') && text.includes('col')) {
    const rowIndex = parts.indexOf('row') + 1;
    const colIndex = parts.indexOf('col') + 1;
    if (rowIndex === 0 || colIndex === 0) return null;
    const valueToken = parts.find((p, i) => pyIsDigit(p) && i !== rowIndex && i !== colIndex);
    const value = pythonInt(valueToken);
    const row = pythonInt(parts[rowIndex]);
    const col = pythonInt(parts[colIndex]);
    if (row === null || col === null || value === null) return null;
    return { row: row - 1, col: col - 1, value };
  }
  const [r, c, v] = parts;
  if (parts.length < 3 || ![r, c, v].every((p) => p !== undefined && pyIsDigit(p.replace(/^-+/, ''))))
    return null;
  const row = pythonInt(r);
  const col = pythonInt(c);
  const value = pythonInt(v);
  if (row === null || col === null || value === null) return null;
  return { row: row - 1, col: col - 1, value };
}

const COMMA = 0x2c;
const SPACE = 0x20;
const ZERO = 0x30;
const NINE = 0x39;
/** Longest digit run read on the fast path; longer ones could round differently from Number(). */
const MAX_FAST_DIGITS = 15;

/**
 * Fast path for the common shape: only ASCII digits, commas and spaces (`"2,1,3"`, `"2 1 3"`,
 * `" 2, 1, 3 "`). For such text lower-casing and trimming change nothing, `row`/`col` cannot occur
 * and every token is all digits, so the full parser's answer is: the first three tokens as
 * numbers, or null when there are fewer than three. Returns undefined (use the full parser) for
 * any other character or a digit run too long to read exactly. (Hand-written: the regex/split
 * route allocates a lowercase copy, a replaced copy and a token array on every env step.)
 */
function parsePlainMove(action: string): SudokuMove | null | undefined {
  let found = 0;
  let row = 0;
  let col = 0;
  let value = 0;
  let digits = 0;
  let number = 0;
  for (let i = 0; i <= action.length; i++) {
    const code = i < action.length ? action.charCodeAt(i) : SPACE;
    if (code >= ZERO && code <= NINE) {
      if (++digits > MAX_FAST_DIGITS) return undefined;
      number = number * 10 + (code - ZERO);
      continue;
    }
    if (code !== COMMA && code !== SPACE) return undefined;
    if (digits === 0) continue;
    if (found === 0) row = number;
    else if (found === 1) col = number;
    else if (found === 2) value = number;
    found++;
    digits = 0;
    number = 0;
  }
  return found < 3 ? null : { row: row - 1, col: col - 1, value };
}
