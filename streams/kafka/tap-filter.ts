/**
 * `spa tap --filter key=value`: which decoded records a tap shows, shared by the terminal tap
 * (cli/tap/tap.ts) and the web tap.
 */
import type { DecodedAnyRecord } from './consume-spa-decode.js';

/** `key=value` on a record's top-level field (or `type=<record name>`). */
export interface TapFilter {
  readonly key: string;
  readonly value: string;
}

/** Parses `--filter key=value`, naming the bad text. */
export function parseTapFilter(text: string): TapFilter {
  const at = text.indexOf('=');
  if (at <= 0) throw new Error(`--filter "${text}" must be key=value on a top-level field, e.g. env=sokoban`);
  return { key: text.slice(0, at).trim(), value: text.slice(at + 1).trim() };
}

/** True when every filter matches: the field's value printed as text equals the filter's value. */
export function matchesTapFilters(decoded: DecodedAnyRecord, filters: readonly TapFilter[]): boolean {
  const type = decoded.ok ? decoded.value.type : 'Undecodable';
  const record = (decoded.ok ? decoded.value.record : decoded.rejected) as unknown as Record<string, unknown>;
  return filters.every(({ key, value }) => {
    const field = key === 'type' && !(key in record) ? type : record[key];
    if (field === undefined || field === null) return value === 'null' && field === null;
    if (Buffer.isBuffer(field)) return field.toString('hex') === value;
    return typeof field === 'object' ? JSON.stringify(field) === value : String(field) === value;
  });
}
