/**
 * Record data made safe for a terminal: a key, header or string field holding `ESC]0;…BEL` or
 * `ESC[2J` would otherwise retitle or clear the screen of whoever runs `spa tap`. Every C0
 * control, DEL and C1 control (U+0080–U+009F, which terminals also obey) is shown escaped.
 * Hand-written: a one-line regular expression; the packages that do this (strip-ansi, …) drop
 * only well-formed ANSI sequences and keep the bare control bytes.
 */

// Matching control characters is this module's job.
/* eslint-disable no-control-regex */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
const CONTROL_BUT_NEWLINE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g;
/* eslint-enable no-control-regex */

/** `\x1b` for ESC, `\x9b` for CSI: the code point as two hex digits (all controls are < 0x100). */
const escaped = (char: string): string => `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`;

/** A one-line field (key, id, reason): every control escaped, newlines too, so it stays on its line. */
export function inlineText(text: string): string {
  return text.replace(CONTROL, escaped);
}

/** A multi-line field (a board, a response): every control escaped except `\n`. */
export function blockText(text: string): string {
  return text.replace(CONTROL_BUT_NEWLINE, escaped);
}

/**
 * A JSON text with DEL and C1 controls escaped as `\u00XX` (JSON.stringify escapes only C0).
 * They occur only inside JSON strings, so the result parses to the same value.
 */
export function jsonText(json: string): string {
  return json.replace(/[\u007f-\u009f]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
