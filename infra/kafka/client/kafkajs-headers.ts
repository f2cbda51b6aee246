/** kafkajs record headers converted to and from the transport's {@link RecordHeaders}. */
import type { IHeaders } from 'kafkajs';
import type { RecordHeaders } from './transport.js';

/** Our headers as kafkajs headers. */
export function toKafkajsHeaders(headers: RecordHeaders | undefined): IHeaders | undefined {
  return headers === undefined ? undefined : { ...headers };
}

/** kafkajs headers (string, Buffer or repeated) as ours; a repeated header keeps its last value. */
export function fromKafkajsHeaders(headers: IHeaders | undefined): RecordHeaders {
  const out: Record<string, Buffer> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    const last = Array.isArray(value) ? value[value.length - 1] : value;
    if (last !== undefined) out[name] = Buffer.isBuffer(last) ? last : Buffer.from(last);
  }
  return out;
}
