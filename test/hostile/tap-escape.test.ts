/**
 * Issue 33 item 7: `spa tap` prints record data, and record data is anyone's who can produce to
 * the topic. A key holding `ESC]0;title BEL ESC[2J` retitled and cleared the terminal; now every
 * C0/C1 control and DEL in keys, headers and record strings is printed escaped (text and JSON),
 * and a one-line field cannot start a line of its own.
 */
import { describe, expect, it } from 'vitest';
import { spaSchemas, type SpaRecordName } from '../../schemas/index.js';
import { decodeAnySpaRecord, type DecodedAnyRecord } from '../../streams/kafka/consume-spa-decode.js';
import { headerNames } from '../../streams/kafka/headers.js';
import { formatTapRecord, tapJsonLine } from '../../cli/tap/tap-format.js';
import type { ConsumedRecord, RecordHeaders } from '../../infra/kafka/client/transport.js';
import { GOLDEN_SAMPLES } from '../fixtures/avro/samples.js';

/** OSC retitle, erase display, an 8-bit CSI, DEL, CR, NUL, and a newline that would forge a line. */
const HOSTILE = '\u001b]0;pwned\u0007\u001b[2J\u009b31m\u007f\r\u0000\n── forged';

/** C0 controls but `\n`, DEL and C1: none of them may reach a terminal raw. */
// eslint-disable-next-line no-control-regex -- finding control characters is the test
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

/** Avro enum fields: a string outside the symbols cannot be encoded, so they stay as they are. */
const ENUMS = new Set(['stage', 'split', 'mode', 'matched']);

/** `value` with HOSTILE appended to every string (but enums) and hostile JSON as the payload. */
function poisoned(value: unknown, field = ''): unknown {
  if (typeof value === 'string') return ENUMS.has(field) ? value : `${value}${HOSTILE}`;
  if (Buffer.isBuffer(value))
    return field === 'payload' ? Buffer.from(JSON.stringify({ trajectory_id: HOSTILE })) : value;
  if (Array.isArray(value)) return value.map((item) => poisoned(item, field));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, poisoned(item, key)]));
  return value;
}

function consumed(value: Buffer, headers: RecordHeaders = {}): ConsumedRecord {
  return {
    topic: 'spa.evil',
    partition: 0,
    offset: 7n,
    key: Buffer.from(`key${HOSTILE}`),
    value,
    headers: { [`x-evil${HOSTILE}`]: Buffer.from(HOSTILE), ...headers },
    timestamp: 1_767_225_600_123,
  };
}

const names: SpaRecordName[] = ['Trajectory', 'SftRow', 'Rollout', 'Rejected', 'PolicyUpdate'];

/**
 * Every record type with every string poisoned (each decodes), plus an undecodable frame and a
 * bad header (each a dead letter made by the tap).
 */
const cases: [string, DecodedAnyRecord, boolean][] = [
  ...names.map((name): [string, DecodedAnyRecord, boolean] => {
    const record = poisoned(GOLDEN_SAMPLES[`${name}.v1`]);
    return [name, decodeAnySpaRecord(consumed(spaSchemas().encode(name, record as never))), true];
  }),
  ['undecodable bytes', decodeAnySpaRecord(consumed(Buffer.from(`garbage${HOSTILE}`))), false],
  [
    'a hostile header echoed in the reject detail',
    decodeAnySpaRecord(
      consumed(spaSchemas().encode('Rollout', GOLDEN_SAMPLES['Rollout.v1'] as never), {
        [headerNames.policyVersion]: Buffer.from(HOSTILE),
      }),
    ),
    false,
  ],
];

describe.each(cases)('spa tap on %s', (_label, decoded, decodes) => {
  it('decodes as intended (the poison went where it should)', () => {
    expect(decoded.ok).toBe(decodes);
  });

  it('prints text with every control escaped and every one-line field on its line', () => {
    const text = formatTapRecord(decoded, true);
    expect(text).not.toMatch(RAW_CONTROL);
    expect(text).not.toMatch(/^── forged/m);
    expect(text.split('\n')[0]).toContain(
      'key key\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\x7f\\x0d\\x00\\x0a── forged',
    );
    expect(text).toContain('header x-evil\\x1b]0;pwned');
  });

  it('prints JSON with C1 and DEL escaped too, parsing back to the same strings', () => {
    const line = tapJsonLine(decoded, true);
    // eslint-disable-next-line no-control-regex -- finding control characters is the test
    expect(line).not.toMatch(/[\u0000-\u001f\u007f-\u009f]/);
    const parsed = JSON.parse(line) as { key: string; headers: Record<string, string> };
    expect(parsed.key).toBe(`key${HOSTILE}`);
    expect(parsed.headers[`x-evil${HOSTILE}`]).toBe(HOSTILE);
  });
});

it('prints a dead letter whose created_at no Date can hold instead of throwing', () => {
  const rejected = { ...(GOLDEN_SAMPLES['Rejected.v1'] as object), created_at: 8_640_000_000_000_001 };
  const decoded = decodeAnySpaRecord(consumed(spaSchemas().encode('Rejected', rejected as never)));
  expect(formatTapRecord(decoded)).toContain('at 8640000000000001 (not a valid time)');
});
