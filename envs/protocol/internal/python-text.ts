/**
 * Python `str` semantics that JavaScript lacks, hand-written because no library offers
 * them: SPA's parser relies on Python's definition of whitespace for `str.strip()` and for
 * `\s` in `re` patterns (reference §4).
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
export function isPyWhitespace(ch: string): boolean {
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
