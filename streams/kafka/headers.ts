/**
 * The headers every SPA record carries (design: Topics): the W3C `traceparent` of the span
 * that produced it, the fingerprint of the Avro schema that wrote the value, and the policy
 * version that generated it.
 */
import type { RecordHeaders } from '../../infra/kafka/client/transport.js';
import kafkaHeaders from '../../schemas/kafka-headers.json' with { type: 'json' };

const header = kafkaHeaders.properties;

/** Header names on the wire (schemas/kafka-headers.json, which the trainer reads too). */
export const headerNames = {
  traceparent: 'traceparent',
  /** CRC-64-AVRO fingerprint of the writer schema, 16 lowercase hex digits. */
  schemaFingerprint: 'spa-schema-fingerprint',
  /** Decimal policy version (an integer >= 0). */
  policyVersion: 'spa-policy-version',
} as const satisfies Record<string, keyof typeof header>;

/** The typed view of SPA's headers; every field is optional on read. */
export interface SpaHeaders {
  readonly traceparent?: string;
  readonly schemaFingerprint?: string;
  readonly policyVersion?: number;
}

// W3C Trace Context §3.2: version-traceid-parentid-flags, lowercase hex.
const traceparentPattern = new RegExp(header[headerNames.traceparent].pattern);
const fingerprintPattern = new RegExp(header[headerNames.schemaFingerprint].pattern);
const versionPattern = new RegExp(header[headerNames.policyVersion].pattern);

function check(headers: SpaHeaders): void {
  if (headers.traceparent !== undefined && !traceparentPattern.test(headers.traceparent))
    throw new Error(`traceparent "${headers.traceparent}" is not W3C 00-<32 hex>-<16 hex>-<2 hex>`);
  if (headers.schemaFingerprint !== undefined && !fingerprintPattern.test(headers.schemaFingerprint))
    throw new Error(`schemaFingerprint "${headers.schemaFingerprint}" must be 16 lowercase hex digits`);
  const version = headers.policyVersion;
  if (version !== undefined && (!Number.isSafeInteger(version) || version < 0))
    throw new Error(`policyVersion ${version} must be a non-negative integer`);
}

/** Encodes SPA headers (validated) as record headers, omitting absent fields. */
export function encodeSpaHeaders(headers: SpaHeaders): RecordHeaders {
  check(headers);
  const out: Record<string, Buffer> = {};
  if (headers.traceparent !== undefined) out[headerNames.traceparent] = Buffer.from(headers.traceparent);
  if (headers.schemaFingerprint !== undefined)
    out[headerNames.schemaFingerprint] = Buffer.from(headers.schemaFingerprint);
  if (headers.policyVersion !== undefined)
    out[headerNames.policyVersion] = Buffer.from(String(headers.policyVersion));
  return out;
}

/** Reads SPA headers from a consumed record; a malformed value throws naming the header. */
export function decodeSpaHeaders(headers: RecordHeaders): SpaHeaders {
  const text = (name: string): string | undefined => headers[name]?.toString('utf8');
  const version = text(headerNames.policyVersion);
  if (version !== undefined && !versionPattern.test(version))
    throw new Error(`header ${headerNames.policyVersion}="${version}" is not a non-negative integer`);
  const decoded: SpaHeaders = {
    ...(text(headerNames.traceparent) !== undefined ? { traceparent: text(headerNames.traceparent) } : {}),
    ...(text(headerNames.schemaFingerprint) !== undefined
      ? { schemaFingerprint: text(headerNames.schemaFingerprint) }
      : {}),
    ...(version !== undefined ? { policyVersion: Number(version) } : {}),
  };
  check(decoded);
  return decoded;
}
