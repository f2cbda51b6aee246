/**
 * The one list of reject reasons (schemas/reject-reasons.json) that the pipeline and the trainer
 * share: the TypeScript codes are its keys (trainer/tests/test_reject_reasons.py checks the
 * Python side against the same file), and every dead letter a consumer writes names one of them.
 */
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { ParseRejection } from '../../envs/protocol/parser.js';
import {
  REJECT_REASONS,
  isRejectReason,
  type FrameDecodeErrorCode,
  type RejectReason,
} from '../../schemas/errors.js';
import { spaSchemas } from '../../schemas/index.js';
import type { Rejection } from '../../operators/verdict.js';
import { decodeKafkaRecord } from '../../streams/kafka/spa-records.js';
import type { ConsumedRecord } from '../../infra/kafka/client/transport.js';

const file = JSON.parse(
  readFileSync(new URL('../../schemas/reject-reasons.json', import.meta.url), 'utf8'),
) as Record<string, unknown>;

const consumed = (value: Buffer, headers: Record<string, Buffer> = {}): ConsumedRecord => ({
  topic: 'spa.sft',
  partition: 0,
  offset: 7n,
  key: Buffer.from('k'),
  value,
  headers,
  timestamp: 0,
});

describe('reject reasons', () => {
  it('are the keys of schemas/reject-reasons.json, each a kebab-case code with a meaning', () => {
    expect(REJECT_REASONS).toEqual(file);
    for (const [code, meaning] of Object.entries(file)) {
      expect(code).toMatch(/^[a-z]+(-[a-z]+)*$/);
      expect(typeof meaning === 'string' && meaning.length > 10, code).toBe(true);
    }
    expect(isRejectReason('bad-magic')).toBe(true);
    expect(isRejectReason('bad-row')).toBe(false); // the trainer's old catch-all is gone
    expect(isRejectReason('toString')).toBe(false);
  });

  it('cover the frame decoder, the parser and every stage rejection (checked by tsc)', () => {
    expectTypeOf<FrameDecodeErrorCode>().toExtend<RejectReason>();
    expectTypeOf<ParseRejection>().toExtend<RejectReason>();
    expectTypeOf<Rejection<unknown>['reason']>().toEqualTypeOf<RejectReason>();
  });

  it('a header the pipeline refuses (spa-policy-version: abc) is dead-lettered as bad-header', () => {
    const frame = spaSchemas().encode('Rejected', {
      key: null,
      source: 's',
      reason: 'bad-magic',
      detail: 'd',
      payload: Buffer.alloc(0),
      payload_fingerprint: null,
      created_at: 0,
    });
    const decoded = decodeKafkaRecord(
      'Rejected',
      consumed(frame, { 'spa-policy-version': Buffer.from('abc') }),
    );
    expect(decoded.ok).toBe(false);
    if (decoded.ok) return;
    expect(decoded.rejected.reason).toBe('bad-header');
    expect(decoded.rejected.detail).toContain('spa-policy-version="abc"');
  });

  it('any bytes and headers a consumer reads decode, or fail with a listed reason', () => {
    const header = fc.constantFrom('traceparent', 'spa-schema-fingerprint', 'spa-policy-version', 'x');
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 64 }),
          fc.uint8Array({ maxLength: 64 }).map((body) => Uint8Array.from([0xc3, 0x01, ...body])),
        ),
        fc.dictionary(header, fc.string({ maxLength: 40 }), { maxKeys: 3 }),
        (bytes, texts) => {
          const headers = Object.fromEntries(Object.entries(texts).map(([k, v]) => [k, Buffer.from(v)]));
          const decoded = decodeKafkaRecord('SftRow', consumed(Buffer.from(bytes), headers));
          if (!decoded.ok)
            expect(isRejectReason(decoded.rejected.reason), decoded.rejected.reason).toBe(true);
        },
      ),
    );
  });
});
