/**
 * An in-process schema registry for single-object frames: encodes with the current version of a
 * record, and decodes any known version by looking the writer schema up by fingerprint and
 * resolving it against the current (reader) schema, Avro schema-resolution style.
 */
import type { Resolver } from 'avsc';
import { FrameDecodeError, RecordEncodeError } from './errors.js';
import { fingerprintHex } from './fingerprint.js';
import type { SchemaVersion } from './schema-version.js';
import { SINGLE_OBJECT_HEADER_LENGTH, SINGLE_OBJECT_MAGIC, splitSingleObject } from './single-object.js';

/** The record names of a record-type map such as `SpaRecordTypes`. */
export type RecordName<Records> = Extract<keyof Records, string>;

/** Resolves fingerprints to schema versions and encodes/decodes typed records as frames. */
export class SchemaRegistry<Records extends object> {
  readonly #byFingerprint = new Map<string, SchemaVersion>();
  readonly #current = new Map<string, SchemaVersion>();
  readonly #resolvers = new Map<string, Resolver>();

  /** Registers every version; the highest version of each record becomes its reader. */
  constructor(versions: Iterable<SchemaVersion>) {
    for (const version of versions) this.#add(version);
  }

  #add(version: SchemaVersion): void {
    const key = fingerprintHex(version.fingerprint);
    const clash = this.#byFingerprint.get(key);
    if (clash) {
      throw new RangeError(
        `fingerprint ${key} of ${version.source} is already registered by ${clash.source}; ` +
          'two versions must differ in canonical form',
      );
    }
    this.#byFingerprint.set(key, version);
    const current = this.#current.get(version.name);
    if (current?.version === version.version) {
      throw new RangeError(
        `${version.source} and ${current.source} both claim ${version.name} v${version.version}`,
      );
    }
    if (!current || version.version > current.version) this.#current.set(version.name, version);
  }

  /** The current (reader and writer) version of a record. */
  current(name: RecordName<Records>): SchemaVersion {
    const version = this.#current.get(name);
    if (!version) {
      throw new RangeError(`unknown record ${name}; known: ${[...this.#current.keys()].join(', ')}`);
    }
    return version;
  }

  /** Every registered version of a record, oldest first. */
  versions(name: RecordName<Records>): SchemaVersion[] {
    return [...this.#byFingerprint.values()]
      .filter((v) => v.name === name)
      .sort((a, b) => a.version - b.version);
  }

  /** The writer schema of a frame, from its header alone (throws `FrameDecodeError`). */
  writerOf(frame: Uint8Array): SchemaVersion {
    return this.#writer(splitSingleObject(frame).fingerprint);
  }

  #writer(fingerprint: Buffer): SchemaVersion {
    const writer = this.#byFingerprint.get(fingerprintHex(fingerprint));
    if (!writer) {
      const known = [...this.#byFingerprint.values()].map(
        (v) => `${v.name} v${v.version} ${fingerprintHex(v.fingerprint)}`,
      );
      throw new FrameDecodeError(
        'unknown-fingerprint',
        `no known schema has fingerprint ${fingerprintHex(fingerprint)}; known: ${known.join(', ')}`,
        Buffer.from(fingerprint),
      );
    }
    return writer;
  }

  /** Encodes `record` with the current schema of `name` as a single-object frame. */
  encode<N extends RecordName<Records>>(name: N, record: Records[N]): Buffer {
    return encodeWith(this.current(name), record);
  }

  /**
   * Decodes a frame into the current shape of `name`, resolving older writer versions (new
   * fields take their defaults). Throws `FrameDecodeError` naming what is wrong.
   */
  decode<N extends RecordName<Records>>(name: N, frame: Uint8Array): Records[N] {
    const reader = this.current(name);
    const { fingerprint: header, body } = splitSingleObject(frame);
    const writer = this.#writer(header);
    const fingerprint = Buffer.from(header);
    if (writer.fullName !== reader.fullName) {
      throw new FrameDecodeError(
        'wrong-record',
        `frame holds ${writer.fullName} v${writer.version}, expected ${reader.fullName}`,
        fingerprint,
      );
    }
    const resolver = writer === reader ? undefined : this.#resolver(reader, writer);
    try {
      return reader.type.fromBuffer(body, resolver) as Records[N];
    } catch (error) {
      throw bodyError(error, writer, fingerprint);
    }
  }

  #resolver(reader: SchemaVersion, writer: SchemaVersion): Resolver {
    const key = fingerprintHex(writer.fingerprint);
    let resolver = this.#resolvers.get(key);
    if (!resolver) {
      try {
        resolver = reader.type.createResolver(writer.type);
      } catch (error) {
        throw new FrameDecodeError(
          'incompatible-schema',
          `${writer.name} v${writer.version} cannot be read as v${reader.version}: ${(error as Error).message}`,
          Buffer.from(writer.fingerprint),
        );
      }
      this.#resolvers.set(key, resolver);
    }
    return resolver;
  }
}

/**
 * Where frames are written before their one copy out: the header and body written in place. avsc's
 * `toBuffer` writes a body over 1 KiB twice (once to measure it) and framing copied it again, which
 * showed in the ingest's CPU profile (bench/README.md#kafka). Grows to the largest frame, never shrinks.
 */
let frameScratch = Buffer.allocUnsafe(64 << 10);

function describeProblems(version: SchemaVersion, record: unknown, error: Error): string[] {
  const problems: string[] = [];
  version.type.isValid(record, {
    errorHook: (path, value, type) => {
      const got = value === undefined ? 'undefined' : JSON.stringify(value);
      problems.push(`${path.join('.') || '(record)'}: got ${got}, expected ${JSON.stringify(type.schema())}`);
    },
  });
  return problems.length > 0 ? problems : [error.message];
}

function bodyError(error: unknown, writer: SchemaVersion, fingerprint: Buffer): FrameDecodeError {
  const message = (error as Error).message;
  const what = `${writer.name} v${writer.version} body`;
  if (message === 'truncated buffer') {
    return new FrameDecodeError('truncated', `${what} ends early (truncated frame)`, fingerprint);
  }
  if (message === 'trailing data') {
    return new FrameDecodeError('trailing-bytes', `${what} has bytes left after the record`, fingerprint);
  }
  return new FrameDecodeError('bad-body', `${what} is not valid Avro: ${message}`, fingerprint);
}

/**
 * Encodes a value with one specific schema version (the registry uses the current one; tests and
 * fixture scripts use history versions). Throws `RecordEncodeError` listing each bad field.
 */
export function encodeWith(version: SchemaVersion, record: unknown): Buffer {
  for (;;) {
    let end: number;
    try {
      end = version.type.encode(record, frameScratch, SINGLE_OBJECT_HEADER_LENGTH);
    } catch (error) {
      throw new RecordEncodeError(version.fullName, describeProblems(version, record, error as Error));
    }
    // avsc returns minus the bytes missing when the body did not fit: grow and write it again.
    if (end < 0) {
      frameScratch = Buffer.allocUnsafe(2 * (frameScratch.length - end));
      continue;
    }
    SINGLE_OBJECT_MAGIC.copy(frameScratch, 0);
    frameScratch.set(version.fingerprint, SINGLE_OBJECT_MAGIC.length);
    return Buffer.from(frameScratch.subarray(0, end));
  }
}
