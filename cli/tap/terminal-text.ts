/**
 * Record data made safe for a terminal: a key, header or string field holding `ESC]0;…BEL` or
 * `ESC[2J` would otherwise retitle or clear the screen of whoever runs `spa tap`, and a bidi
 * override (U+202E) would reverse what follows it. Every control (C0, DEL, C1) and invisible format
 * character is shown escaped, by the escaping the web tap uses too (streams/kafka/tap-text.ts).
 * Hand-written: the packages that do this (strip-ansi, …) drop only well-formed ANSI sequences and
 * keep the bare control bytes and every format character.
 */
import { visibleJson, visibleText } from '../../streams/kafka/tap-text.js';

/** A one-line field (key, id, reason): every control escaped, newlines too, so it stays on its line. */
export function inlineText(text: string): string {
  return visibleText(text);
}

/** A multi-line field (a board, a response): every control escaped except `\n`. */
export function blockText(text: string): string {
  return visibleText(text, true);
}

/** A JSON text with what JSON.stringify leaves raw (DEL, C1, format characters) `\u`-escaped. */
export function jsonText(json: string): string {
  return visibleJson(json);
}
