/**
 * Issue 42 item 4: bidi controls and zero-width characters in record data reached `spa tap` and the
 * web tap's cards raw (a key `k\u202Eyek` showed as `k‮yek`). Now both show every control and
 * invisible format character escaped (`\u202E`), in text, keys and headers, by one shared function
 * (streams/kafka/tap-text.ts); JSON output escapes them too and parses back to the same strings.
 */
import { describe, expect, it } from 'vitest';
import { formatTapRecord, tapJsonLine } from '../../cli/tap/tap-format.js';
import { spaSchemas, type Trajectory } from '../../schemas/index.js';
import { decodeAnySpaRecord } from '../../streams/kafka/consume-spa-decode.js';
import { visibleText } from '../../streams/kafka/tap-text.js';
import { toWebRecord } from '../../web/server/web-record.js';
import type { ConsumedRecord } from '../../infra/kafka/client/transport.js';
import { GOLDEN_SAMPLES } from '../fixtures/avro/samples.js';

/**
 * The characters the issue names and their kin: bidi embeddings, overrides and isolates, the Arabic
 * letter mark, zero-width space/non-joiner/joiner, LRM/RLM, word joiner, line and paragraph
 * separators, the byte-order mark, a soft hyphen and a tag character (past U+FFFF).
 */
const HIDDEN = [
  ...[0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x061c],
  ...[0x200b, 0x200c, 0x200d, 0x200e, 0x200f, 0x2060, 0x2028, 0x2029, 0xfeff, 0x00ad, 0xe0041],
];
const RAW = new RegExp(`[${HIDDEN.map((c) => String.fromCodePoint(c)).join('')}]`, 'u');
const ALL_HIDDEN = HIDDEN.map((c) => String.fromCodePoint(c)).join('');

/** The spoofed key of the issue: it reads `kyek`-reversed when shown raw. */
const KEY = 'k\u202Eyek';

function consumed(value: Buffer): ConsumedRecord {
  return {
    topic: 'spa.evil',
    partition: 0,
    offset: 3n,
    key: Buffer.from(KEY),
    value,
    headers: { 'x-\u2067note': Buffer.from(`v\u200Dal${ALL_HIDDEN}`) },
    timestamp: 1_767_225_600_000,
  };
}

const sample = GOLDEN_SAMPLES['Trajectory.v1'] as Trajectory;
const trajectory: Trajectory = {
  ...sample,
  trajectory_id: `traj\u202E${ALL_HIDDEN}`,
  group_id: 'g\u2066roup',
  turns: sample.turns.map((turn) => ({ ...turn, state: `${turn.state}\u200B\u202E` })),
};
const decoded = decodeAnySpaRecord(consumed(spaSchemas().encode('Trajectory', trajectory)));

describe('visibleText', () => {
  it('escapes each hidden character as \\uXXXX (\\u{XXXXX} past U+FFFF), controls as \\xHH', () => {
    expect(visibleText(KEY)).toBe('k\\u202Eyek');
    expect(visibleText('a\u200Bb\u2028c\u{E0041}d\u001be\n')).toBe('a\\u200Bb\\u2028c\\u{E0041}d\\x1be\\x0a');
    expect(visibleText('two\nlines\u2029', true)).toBe('two\nlines\\u2029');
    expect(visibleText(ALL_HIDDEN)).not.toMatch(RAW);
    expect(visibleText('plain עברית text, émoji 🙂')).toBe('plain עברית text, émoji 🙂');
  });
});

describe('spa tap (terminal) on bidi and zero-width characters', () => {
  it('prints the key, headers and record text with every one escaped', () => {
    expect(decoded.ok).toBe(true);
    const text = formatTapRecord(decoded, true);
    expect(text).not.toMatch(RAW);
    expect(text).toContain('key k\\u202Eyek');
    expect(text).toContain('header x-\\u2067note: v\\u200Dal\\u202A');
    expect(text).toContain('Trajectory traj\\u202E\\u202A\\u202B');
    expect(text).toContain('\\u200B\\u202E'); // in the boards
  });

  it('prints JSON with them \\u-escaped, parsing back to the same strings', () => {
    const line = tapJsonLine(decoded, true);
    expect(line).not.toMatch(RAW);
    expect(line).toContain('"key":"k\\u202eyek"');
    const parsed = JSON.parse(line) as { key: string; record: Trajectory; headers: Record<string, string> };
    expect(parsed.key).toBe(KEY);
    expect(parsed.record.trajectory_id).toBe(trajectory.trajectory_id);
    expect(parsed.headers['x-\u2067note']).toBe(`v\u200Dal${ALL_HIDDEN}`);
  });
});

describe('the web tap card on bidi and zero-width characters', () => {
  it('carries every string escaped: the key, ids, boards', () => {
    const card = toWebRecord(decoded);
    const json = JSON.stringify(card);
    expect(json).not.toMatch(RAW);
    expect(card.source.key).toBe('k\\u202Eyek');
    if (card.kind !== 'Trajectory') throw new Error(`shown as ${card.kind}`);
    expect(card.trajectory.trajectoryId).toBe(visibleText(trajectory.trajectory_id));
    expect(card.trajectory.groupId).toBe('g\\u2066roup');
  });
});
