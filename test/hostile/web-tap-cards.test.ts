/**
 * The web tap's record-to-card path is total (issue 33 item 1): whatever a topic holds — any
 * record the Avro schemas allow (generated from schemas/*.avsc), a dead letter with any payload,
 * a valid header over random bytes, or plain garbage — decodes, becomes a card of bounded size
 * that JSON carries to the page, and counts in the stats, without throwing. One such dead letter
 * used to end `spa tap --web` on every start.
 */
import fc from 'fast-check';
import type { Type, types } from 'avsc';
import { describe, expect, it } from 'vitest';
import { spaSchemas, type SpaRecordName } from '../../schemas/index.js';
import { decodeAnySpaRecord } from '../../streams/kafka/consume-spa-decode.js';
import { encodeSpaHeaders } from '../../streams/kafka/headers.js';
import type { ConsumedRecord } from '../../infra/kafka/client/transport.js';
import { TapStats } from '../../web/server/tap-stats.js';
import { MAX_CARD_BYTES, toWebRecord, type WebRecord } from '../../web/server/web-record.js';
import { EVIL_PAYLOAD, evilRejected } from './web-tap-records.js';

const RECORDS: readonly SpaRecordName[] = ['Trajectory', 'SftRow', 'Rollout', 'Rejected', 'PolicyUpdate'];
const KINDS = new Set<string>([...RECORDS, 'Undecodable', 'Odd']);

/** Pieces of model text and boards: tags the page looks for, grid characters, row breaks. */
const piece = fc.constantFrom(
  '<observation>',
  '</observation>',
  '<prediction>',
  '</prediction>',
  '<answer>',
  '</answer>',
  '<think>',
  '|',
  '\n',
  ' ',
  '#',
  'P',
  '_',
  '1',
);
/** Any text: arbitrary code points (lone surrogates too), or board-like text made of pieces. */
const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 24 }),
  fc.array(fc.oneof(piece, fc.string({ maxLength: 3 })), { maxLength: 24 }).map((p) => p.join('')),
);
const bytes = fc.uint8Array({ maxLength: 48 }).map((b) => Buffer.from(b));

/** Every value `type` allows, as a fast-check arbitrary (the Avro types the schemas use). */
function avroValue(type: Type): fc.Arbitrary<unknown> {
  switch (type.typeName) {
    case 'record':
      return fc.record(
        Object.fromEntries((type as types.RecordType).fields.map((f) => [f.name, avroValue(f.type)])),
      );
    case 'array':
      return fc.array(avroValue((type as types.ArrayType).itemsType), { maxLength: 4 });
    case 'union:unwrapped':
      return fc.oneof(...(type as types.UnwrappedUnionType).types.map(avroValue));
    case 'enum':
      return fc.constantFrom(...(type as types.EnumType).symbols);
    case 'fixed':
      return fc
        .uint8Array({ minLength: (type as types.FixedType).size, maxLength: (type as types.FixedType).size })
        .map((b) => Buffer.from(b));
    case 'string':
      return text;
    case 'bytes':
      return bytes;
    case 'int':
      return fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
    case 'long':
      return fc.integer({ min: -(2 ** 52), max: 2 ** 52 }); // what avsc encodes as a JS number
    case 'float':
    case 'double':
      return fc.double(); // NaN, ±Infinity and -0 included
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      throw new Error(`no arbitrary for Avro type ${type.typeName}: add one`);
  }
}

const recordArb = (name: SpaRecordName) => avroValue(spaSchemas().current(name).type);
/** `value` as JSON bytes (undefined, a deleted whole, as an empty payload). */
const json = (value: unknown) => Buffer.from(JSON.stringify(value) ?? '');

/** `value` with the part at `path` (indices into whatever is there) replaced, or deleted. */
function mutate(value: unknown, path: readonly number[], replacement: unknown): unknown {
  if (path.length === 0 || value === null || typeof value !== 'object') return replacement;
  const keys = Object.keys(value);
  if (keys.length === 0) return value;
  const key = keys[path[0]! % keys.length]!;
  const copy = (Array.isArray(value) ? [...value] : { ...value }) as Record<string, unknown>;
  if (path.length === 1 && replacement === undefined) delete copy[key];
  else copy[key] = mutate(copy[key], path.slice(1), replacement);
  return copy;
}

/** What a dead letter may carry: bytes, any JSON, rejected trajectories and rows, whole or broken. */
const payload = fc.oneof(
  bytes,
  fc.jsonValue().map(json),
  recordArb('Trajectory').map(json),
  recordArb('SftRow').map(json),
  fc
    .tuple(
      recordArb('Trajectory'),
      fc.array(fc.nat(), { maxLength: 5 }),
      fc.option(fc.jsonValue(), { nil: undefined }),
    )
    .map(([t, path, replacement]) => json(mutate(t, path, replacement))),
  fc.constant(Buffer.from(EVIL_PAYLOAD)),
);

/** A record as a consumer hands it over; headers as the pipeline writes them, or none. */
const consumed = (value: Buffer | null, key: Buffer | null, headers = {}, timestamp = 0): ConsumedRecord => ({
  topic: 'spa.any',
  partition: 0,
  offset: 7n,
  key,
  value,
  headers,
  timestamp,
});

/** A schema-valid record of any SPA type (dead letters with the payloads above), encoded. */
const validRecord = fc
  .constantFrom(...RECORDS)
  .chain((name) =>
    fc.record({
      name: fc.constant(name),
      record:
        name === 'Rejected'
          ? fc.tuple(recordArb('Rejected'), payload).map(([r, p]) => ({ ...(r as object), payload: p }))
          : recordArb(name),
      key: fc.option(bytes, { nil: null }),
      withHeaders: fc.boolean(),
      timestamp: fc.oneof(fc.constant(0), fc.maxSafeInteger()),
    }),
  )
  .map(({ name, record, key, withHeaders, timestamp }) => ({
    name,
    record: consumed(
      spaSchemas().encode(name, record as never),
      key,
      withHeaders
        ? encodeSpaHeaders({ schemaFingerprint: spaSchemas().current(name).fingerprint.toString('hex') })
        : {},
      timestamp,
    ),
  }));

/** Bytes no schema wrote: garbage, or a real single-object header over a random body. */
const garbage = fc.oneof(
  bytes,
  fc
    .tuple(fc.constantFrom(...RECORDS), bytes)
    .map(([name, body]) =>
      Buffer.concat([Buffer.from([0xc3, 0x01]), spaSchemas().current(name).fingerprint, body]),
    ),
);
const anyHeaders = fc.dictionary(fc.string({ maxLength: 20 }), bytes, { maxKeys: 3 });

/** The card for `record` after the path the tap takes; checks what holds for every card. */
function card(record: ConsumedRecord, stats: TapStats): WebRecord {
  const decoded = decodeAnySpaRecord(record, 0);
  const web = toWebRecord(decoded);
  expect(KINDS).toContain(web.kind);
  if (web.kind === 'Odd') expect(web.reason).toBe('card-too-large'); // never a failure to draw
  const text = JSON.stringify(web);
  expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_CARD_BYTES);
  expect(JSON.parse(text)).toEqual(JSON.parse(text)); // plain JSON, as the page gets it
  stats.recordRead(decoded.ok ? decoded.value.type : 'Undecodable');
  if (decoded.ok && decoded.value.type === 'Trajectory') {
    const t = decoded.value.record;
    stats.episode(t.env, t.group_id, t.success);
  }
  stats.snapshot();
  return web;
}

describe('the web tap turns anything a topic holds into a card', () => {
  it('every record the schemas allow becomes its own card (or a summary when too large)', () => {
    const stats = new TapStats();
    fc.assert(
      fc.property(validRecord, ({ name, record }) => {
        const web = card(record, stats);
        expect(web.kind === 'Odd' ? web.recordKind : web.kind).toBe(name);
      }),
      { numRuns: 400 },
    );
  });

  it('any bytes, keys and headers become a card (Undecodable when no schema wrote them)', () => {
    const stats = new TapStats();
    fc.assert(
      fc.property(
        fc.option(garbage, { nil: null }),
        fc.option(bytes, { nil: null }),
        anyHeaders,
        fc.integer(),
        (value, key, headers, timestamp) => {
          card(consumed(value, key, headers, timestamp), stats);
        },
      ),
      { numRuns: 400 },
    );
  });

  it("shows the issue's dead letter as a Rejected card that says why its payload is not drawn", () => {
    const web = card(
      consumed(spaSchemas().encode('Rejected', evilRejected), Buffer.from('evil')),
      new TapStats(),
    );
    if (web.kind !== 'Rejected') throw new Error(web.kind);
    expect(web.payloadTrajectory).toBeNull();
    expect(web.payloadNote).toContain('not a trajectory (group_id: missing, expected string)');
  });

  it('summarises a record whose card would pass the size bound', () => {
    const [sampled] = fc.sample(recordArb('Trajectory'), { seed: 1, numRuns: 1 });
    const board = 'x'.repeat(100_000); // 100 kB of text: 4 boards of 100,000 cells on the card
    const turn = {
      turn: 0,
      state: board,
      response_raw: `<observation>${board}</observation><prediction>${board}</prediction>`,
      llm_response: '',
      parse: { matched: 'none', ok: false, reason: null, actions: [], penalty: false },
      executed: [],
      rewards: [],
      reward_text: '0',
      state_after: board,
      done: true,
    };
    const huge = { ...(sampled as object), turns: [turn] };
    const web = card(consumed(spaSchemas().encode('Trajectory', huge as never), null), new TapStats());
    if (web.kind !== 'Odd') throw new Error(web.kind);
    expect(web).toMatchObject({ recordKind: 'Trajectory', reason: 'card-too-large' });
    expect(web.detail).toContain("over the page's 256 KiB");
  });
});
