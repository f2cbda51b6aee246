import { describe, expect, it } from 'vitest';
import kafkaHeaders from '../../schemas/kafka-headers.json' with { type: 'json' };
import { decodeSpaHeaders, encodeSpaHeaders, headerNames } from '../../streams/kafka/headers.js';

const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('SPA record headers', () => {
  it('writes the headers of schemas/kafka-headers.json (shared with the trainer), each matching its pattern', () => {
    const schema: Record<string, { pattern: string; 'x-field': string }> = kafkaHeaders.properties;
    expect(Object.values(headerNames).sort()).toEqual(Object.keys(schema).sort());
    for (const [field, name] of Object.entries(headerNames)) expect(schema[name]?.['x-field']).toBe(field);
    const written = encodeSpaHeaders({
      traceparent,
      schemaFingerprint: 'c301aa00bb11cc22',
      policyVersion: 12,
    });
    expect(Object.keys(written).sort()).toEqual(Object.keys(schema).sort());
    for (const [name, value] of Object.entries(written))
      expect(value?.toString('utf8')).toMatch(new RegExp(schema[name]!.pattern));
  });

  it('round-trips traceparent, schema fingerprint and policy version as UTF-8 bytes', () => {
    const headers = encodeSpaHeaders({
      traceparent,
      schemaFingerprint: 'c301aa00bb11cc22',
      policyVersion: 12,
    });
    expect(headers[headerNames.policyVersion]?.toString()).toBe('12');
    expect(headers[headerNames.traceparent]?.toString()).toBe(traceparent);
    expect(decodeSpaHeaders(headers)).toEqual({
      traceparent,
      schemaFingerprint: 'c301aa00bb11cc22',
      policyVersion: 12,
    });
    expect(decodeSpaHeaders({})).toEqual({});
  });

  it('rejects malformed values, naming them', () => {
    expect(() => encodeSpaHeaders({ traceparent: '00-abc' })).toThrow('traceparent "00-abc" is not W3C');
    expect(() => encodeSpaHeaders({ policyVersion: -1 })).toThrow('policyVersion -1');
    expect(() => encodeSpaHeaders({ schemaFingerprint: 'XYZ' })).toThrow('16 lowercase hex digits');
    expect(() => decodeSpaHeaders({ [headerNames.policyVersion]: Buffer.from('v3') })).toThrow(
      'spa-policy-version="v3"',
    );
  });
});
