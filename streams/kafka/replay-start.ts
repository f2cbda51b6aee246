/**
 * The start of a replay as the user writes it: `--from-offset N` (every partition),
 * `--from-offset 0:120,3:40` (those partitions only) or `--from-time <ISO 8601>`.
 */
import type { ReadStart } from './consume-spa.js';

function offsetOf(text: string, whole: string): bigint {
  if (!/^\d+$/.test(text))
    throw new Error(
      `--from-offset "${whole}": "${text}" is not an offset; expected N or p:N[,p:N…] with integers ≥ 0`,
    );
  return BigInt(text);
}

/** Parses `--from-offset`: `N` for every partition, or `p:N` entries for named partitions. */
export function parseFromOffset(text: string): ReadStart {
  const entries = text.split(',').map((entry) => entry.trim());
  let every: bigint | undefined;
  const partitions = new Map<number, bigint>();
  for (const entry of entries) {
    const [first, second, ...rest] = entry.split(':');
    if (rest.length > 0 || first === undefined || first === '')
      throw new Error(`--from-offset "${text}": entry "${entry}" must be N or partition:N`);
    if (second === undefined) {
      if (every !== undefined) throw new Error(`--from-offset "${text}" gives an all-partition offset twice`);
      every = offsetOf(first, text);
      continue;
    }
    const partition = Number(offsetOf(first, text));
    if (partitions.has(partition))
      throw new Error(`--from-offset "${text}" names partition ${partition} twice`);
    partitions.set(partition, offsetOf(second, text));
  }
  return {
    kind: 'offsets',
    ...(every === undefined ? {} : { every }),
    ...(partitions.size === 0 ? {} : { partitions }),
  };
}

/** Parses `--from-time`: an ISO 8601 date-time (a date alone means its UTC midnight). */
export function parseFromTime(text: string): ReadStart {
  const iso = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
  const timestamp = Date.parse(text);
  if (!iso.test(text.trim()) || Number.isNaN(timestamp))
    throw new Error(`--from-time "${text}" is not an ISO 8601 time; expected e.g. 2025-06-01T12:00:00Z`);
  return { kind: 'timestamp', timestamp };
}
