/**
 * Python `str` semantics that JavaScript lacks, hand-written because no library offers
 * them (docs/spa-protocol.md#python-text): SPA's parser relies on Python's whitespace for
 * `str.strip()`, `str.split()` and `\s` in `re` patterns, and RAGEN's Sudoku parser on
 * `str.isdigit()` and `int()`, which accept digits of every script.
 */

/**
 * Every code point for which Python 3.11 `str.isspace()` is true; `re`'s Unicode `\s`
 * matches exactly the same set (checked by enumerating all code points in CPython 3.11).
 * JS's `\s`/`trim()` differ: they lack U+001C–U+001F and U+0085 and add U+FEFF.
 * All of them are single UTF-16 code units, so code-unit scanning is exact.
 */
const PY_WHITESPACE_SOURCE =
  '\\t\\n\\x0b\\x0c\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';

/** A regex source fragment matching one Python whitespace character (use in `new RegExp`). */
export const PY_WS = `[${PY_WHITESPACE_SOURCE}]`;

const ONE_PY_WS = new RegExp(`^${PY_WS}$`);

/** Whether the single UTF-16 code unit `ch` is Python whitespace. */
function isPyWhitespace(ch: string): boolean {
  return ONE_PY_WS.test(ch);
}

/** Python `text.strip()` with no argument (a linear scan: a `\s+$` regex is quadratic). */
export function pyStrip(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isPyWhitespace(text.charAt(start))) start++;
  while (end > start && isPyWhitespace(text.charAt(end - 1))) end--;
  return text.slice(start, end);
}

/** Python `text.split()` with no argument: runs of Python whitespace separate, empty pieces dropped. */
export function pySplit(text: string): string[] {
  return text.split(PY_WS_RUN).filter((piece) => piece.length > 0);
}

const PY_WS_RUN = new RegExp(`${PY_WS}+`);

// The characters CPython 3.11 (Unicode 14.0) counts as decimal (`str.isdecimal()`, what `int()`
// reads) and those `str.isdigit()` adds (superscripts, circled digits…). Tables, not `\p{Nd}`:
// Node's Unicode is newer than Python 3.11's, and JS has no Numeric_Type=Digit property.
// Every decimal range is a run of whole 0–9 sequences, so a digit's value is its offset mod 10.
// Generated with: [c for c in range(0x110000) if chr(c).isdecimal()] (and isdigit()).
const PY_DECIMAL_RANGES: readonly (readonly [number, number])[] = [
  [0x30, 0x39],
  [0x660, 0x669],
  [0x6f0, 0x6f9],
  [0x7c0, 0x7c9],
  [0x966, 0x96f],
  [0x9e6, 0x9ef],
  [0xa66, 0xa6f],
  [0xae6, 0xaef],
  [0xb66, 0xb6f],
  [0xbe6, 0xbef],
  [0xc66, 0xc6f],
  [0xce6, 0xcef],
  [0xd66, 0xd6f],
  [0xde6, 0xdef],
  [0xe50, 0xe59],
  [0xed0, 0xed9],
  [0xf20, 0xf29],
  [0x1040, 0x1049],
  [0x1090, 0x1099],
  [0x17e0, 0x17e9],
  [0x1810, 0x1819],
  [0x1946, 0x194f],
  [0x19d0, 0x19d9],
  [0x1a80, 0x1a89],
  [0x1a90, 0x1a99],
  [0x1b50, 0x1b59],
  [0x1bb0, 0x1bb9],
  [0x1c40, 0x1c49],
  [0x1c50, 0x1c59],
  [0xa620, 0xa629],
  [0xa8d0, 0xa8d9],
  [0xa900, 0xa909],
  [0xa9d0, 0xa9d9],
  [0xa9f0, 0xa9f9],
  [0xaa50, 0xaa59],
  [0xabf0, 0xabf9],
  [0xff10, 0xff19],
  [0x104a0, 0x104a9],
  [0x10d30, 0x10d39],
  [0x11066, 0x1106f],
  [0x110f0, 0x110f9],
  [0x11136, 0x1113f],
  [0x111d0, 0x111d9],
  [0x112f0, 0x112f9],
  [0x11450, 0x11459],
  [0x114d0, 0x114d9],
  [0x11650, 0x11659],
  [0x116c0, 0x116c9],
  [0x11730, 0x11739],
  [0x118e0, 0x118e9],
  [0x11950, 0x11959],
  [0x11c50, 0x11c59],
  [0x11d50, 0x11d59],
  [0x11da0, 0x11da9],
  [0x16a60, 0x16a69],
  [0x16ac0, 0x16ac9],
  [0x16b50, 0x16b59],
  [0x1d7ce, 0x1d7ff],
  [0x1e140, 0x1e149],
  [0x1e2f0, 0x1e2f9],
  [0x1e950, 0x1e959],
  [0x1fbf0, 0x1fbf9],
];

const PY_DIGIT_ONLY_RANGES: readonly (readonly [number, number])[] = [
  [0xb2, 0xb3],
  [0xb9, 0xb9],
  [0x1369, 0x1371],
  [0x19da, 0x19da],
  [0x2070, 0x2070],
  [0x2074, 0x2079],
  [0x2080, 0x2089],
  [0x2460, 0x2468],
  [0x2474, 0x247c],
  [0x2488, 0x2490],
  [0x24ea, 0x24ea],
  [0x24f5, 0x24fd],
  [0x24ff, 0x24ff],
  [0x2776, 0x277e],
  [0x2780, 0x2788],
  [0x278a, 0x2792],
  [0x10a40, 0x10a43],
  [0x10e60, 0x10e68],
  [0x11052, 0x1105a],
  [0x1f100, 0x1f10a],
];

function inRanges(ranges: readonly (readonly [number, number])[], code: number): number {
  for (const [start, end] of ranges) {
    if (code < start) return -1;
    if (code <= end) return start;
  }
  return -1;
}

/** The decimal value of code point `code` as Python's `int()` reads it, or -1. */
function decimalValue(code: number): number {
  const start = inRanges(PY_DECIMAL_RANGES, code);
  return start < 0 ? -1 : (code - start) % 10;
}

/** Python `token.isdigit()`: non-empty and every code point a decimal or other digit. */
export function pyIsDigit(token: string): boolean {
  if (token.length === 0) return false;
  for (const ch of token) {
    const code = ch.codePointAt(0)!;
    if (decimalValue(code) < 0 && inRanges(PY_DIGIT_ONLY_RANGES, code) < 0) return false;
  }
  return true;
}

/**
 * Python `int(text)` in base 10, or null where Python raises ValueError: Python whitespace
 * around, an optional sign, decimal digits of any script (mixing allowed) with single `_`
 * between digits. Values past 2^53 lose precision (they are far outside any grid).
 */
export function pyInt(text: string): number | null {
  const body = pyStrip(text);
  const sign = body.startsWith('-') ? -1 : 1;
  const digits = body.startsWith('-') || body.startsWith('+') ? body.slice(1) : body;
  let value = 0;
  let previous: 'start' | 'digit' | 'underscore' = 'start';
  for (const ch of digits) {
    if (ch === '_') {
      if (previous !== 'digit') return null;
      previous = 'underscore';
      continue;
    }
    const digit = decimalValue(ch.codePointAt(0)!);
    if (digit < 0) return null;
    value = value * 10 + digit;
    previous = 'digit';
  }
  return previous === 'digit' ? sign * value : null;
}
