/**
 * Golden bytes (as kafkajs pins its wire formats): frames written once by
 * test/fixtures/avro/write-golden.ts and committed. A schema change that would break records already on a
 * topic fails here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { encodeWith, fingerprintHex, spaSchemas } from '../../schemas/index.js';
import type { SchemaVersion, SpaRecordName } from '../../schemas/index.js';

const fixtureDir = new URL('../fixtures/avro/', import.meta.url);
const registry = spaSchemas();
const names: SpaRecordName[] = ['Trajectory', 'SftRow', 'Rollout', 'Rejected', 'PolicyUpdate'];
const allVersions = names.flatMap((name) => registry.versions(name));
const goldenFiles = readdirSync(fixtureDir).filter((file) => file.endsWith('.bin'));

interface Golden {
  readonly version: SchemaVersion;
  readonly frame: Buffer;
  /** The record as its writer version sees it, from the committed Avro JSON. */
  readonly record: unknown;
}

function golden(file: string): Golden {
  const match = /^(\w+)\.v(\d+)\.bin$/.exec(file);
  const version = allVersions.find((v) => `${v.name}.v${v.version}.bin` === file);
  if (!match || !version) throw new Error(`${file} matches no schema version`);
  const json = readFileSync(new URL(`${match[1]}.v${match[2]}.json`, fixtureDir), 'utf8');
  return {
    version,
    frame: readFileSync(new URL(file, fixtureDir)),
    record: version.type.fromString(JSON.stringify(JSON.parse(json))),
  };
}

describe('golden single-object frames', () => {
  it('has one golden frame per schema version, current and historical', () => {
    expect(goldenFiles.sort()).toEqual(allVersions.map((v) => `${v.name}.v${v.version}.bin`).sort());
  });

  it.each(goldenFiles)('%s carries its writer fingerprint and re-encodes byte-identically', (file) => {
    const { version, frame, record } = golden(file);
    expect(fingerprintHex(frame.subarray(2, 10))).toBe(fingerprintHex(version.fingerprint));
    expect(encodeWith(version, record).equals(frame)).toBe(true);
  });

  it.each(goldenFiles)('%s decodes through the current reader', (file) => {
    const { version, frame, record } = golden(file);
    const name = version.name as SpaRecordName;
    const decoded = registry.decode(name, frame);
    if (version === registry.current(name)) {
      expect(decoded).toEqual(record);
      expect(registry.encode(name, decoded).equals(frame)).toBe(true);
    } else {
      expect(decoded).toMatchObject(record as object);
    }
  });

  it('reads an SftRow written before annotation and mask_transitions existed (evolution)', () => {
    const { version, frame, record } = golden('SftRow.v0.bin');
    expect(version.version).toBeLessThan(registry.current('SftRow').version);
    expect(record).not.toHaveProperty('annotation');
    const row = registry.decode('SftRow', frame);
    expect(row).toEqual({ ...(record as object), annotation: 'gt', mask_transitions: false });
  });

  it('pins every fingerprint in fingerprints.json (read by the Python trainer test)', () => {
    type Pin = { name: string; version: number };
    const byNameAndVersion = (a: Pin, b: Pin): number =>
      a.name.localeCompare(b.name) || a.version - b.version;
    const pinned = JSON.parse(readFileSync(new URL('fingerprints.json', fixtureDir), 'utf8')) as Pin[];
    expect(pinned.sort(byNameAndVersion)).toEqual(
      [...allVersions].sort(byNameAndVersion).map((v) => ({
        name: v.name,
        version: v.version,
        fingerprint: fingerprintHex(v.fingerprint),
        canonical_form: v.canonicalForm,
      })),
    );
  });
});
