/**
 * Record text made visible for a tap, shared by the terminal tap (cli/tap/) and the web tap (web/):
 * record data is anyone's who can produce to a topic, and some characters act instead of showing.
 * Controls (Cc: ESC sequences retitle or clear a terminal) are shown as `\x1b`; invisible format
 * characters (Cf: the bidi overrides and isolates U+202A–U+202E, U+2066–U+2069, U+061C, the
 * zero-width U+200B–U+200F, U+2060, U+FEFF, the tag characters, …) and the line and paragraph
 * separators U+2028/U+2029 as `\u202E` (`\u{E0041}` past U+FFFF). A key shown as `k‮yek` is really
 * `k\u202Eyek`: the reader sees which characters are there, not what they do to their neighbours.
 */

/** Every character a tap shows escaped (Cc, Cf, Zl, Zp); `\n` is one of them. */
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
/** The same without `\n`, for multi-line fields (a board, a response). */
const HIDDEN_BUT_NEWLINE = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;

const hex = (n: number, digits: number): string => n.toString(16).toUpperCase().padStart(digits, '0');

/** `\x1b` for a control below U+0100, `\u202E` for a format character, `\u{E0041}` past U+FFFF. */
function escaped(char: string): string {
  const code = char.codePointAt(0) ?? 0;
  if (code < 0x100) return `\\x${hex(code, 2).toLowerCase()}`;
  return code > 0xffff ? `\\u{${hex(code, 5)}}` : `\\u${hex(code, 4)}`;
}

/**
 * `text` with every control and invisible format character escaped; with `keepNewlines`, `\n`
 * stays (multi-line fields), otherwise it is escaped too (a one-line field stays on its line).
 */
export function visibleText(text: string, keepNewlines = false): string {
  return text.replace(keepNewlines ? HIDDEN_BUT_NEWLINE : HIDDEN, escaped);
}

/**
 * A JSON text with what JSON.stringify leaves raw escaped as `\uXXXX` (DEL, C1 controls, format
 * characters, U+2028/U+2029; one escape per UTF-16 unit past U+FFFF). Such characters occur only
 * inside JSON strings, so the result parses to the same value.
 */
export function visibleJson(json: string): string {
  return json.replace(HIDDEN, (char) =>
    [...Array(char.length).keys()].map((i) => `\\u${hex(char.charCodeAt(i), 4).toLowerCase()}`).join(''),
  );
}

/** `value` with every string in it (object keys too) made visible, newlines kept; other values as they are. */
export function visibleStrings<T>(value: T): T {
  if (typeof value === 'string') return visibleText(value, true) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => visibleStrings(item)) as T;
  if (value !== null && typeof value === 'object' && !Buffer.isBuffer(value))
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [visibleText(key), visibleStrings(item)]),
    ) as T;
  return value;
}
