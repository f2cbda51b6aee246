/**
 * Loads the schema files: `schemas/<Name>.avsc` is the current (reader) version of each record
 * and `schemas/history/<Name>.v<N>.avsc` keeps every older released version, so frames written
 * long ago still resolve. The current version number is one past the newest history version
 * (1 when there is no history).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SchemaLoadError } from './errors.js';
import { compileSchemaVersion } from './schema-version.js';
import type { SchemaVersion } from './schema-version.js';

/** The directory holding the project's .avsc files (this module's directory). */
export const SCHEMA_DIR: string = fileURLToPath(new URL('.', import.meta.url));

const HISTORY_FILE = /^([A-Za-z_][A-Za-z0-9_]*)\.v(\d+)\.avsc$/;

/** Reads and parses one .avsc file. */
export function readSchemaFile(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch (error) {
    throw new SchemaLoadError(`${file}: cannot read schema JSON: ${(error as Error).message}`);
  }
}

/** Sorted paths of the current schema files in `dir`. */
export function currentSchemaFiles(dir: string = SCHEMA_DIR): string[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.avsc'))
    .sort()
    .map((file) => join(dir, file));
}

/** Every version of every record in `dir` (current and history), checked for consistency. */
export function loadSchemaVersions(dir: string = SCHEMA_DIR): SchemaVersion[] {
  const history = loadHistory(join(dir, 'history'));
  const versions: SchemaVersion[] = [];
  for (const file of currentSchemaFiles(dir)) {
    const expectedName = basename(file, '.avsc');
    const older = history.filter((v) => v.name === expectedName);
    const version = Math.max(1, ...older.map((v) => v.version + 1));
    const current = compileSchemaVersion(readSchemaFile(file), version, file);
    expectName(current, expectedName);
    for (const old of older) {
      if (old.fingerprint.equals(current.fingerprint)) {
        throw new SchemaLoadError(
          `${old.source} has the same canonical form as ${file}; ` +
            'freeze a version in history/ only when the canonical form changes',
        );
      }
    }
    versions.push(...older, current);
  }
  const orphans = history.filter((v) => !versions.includes(v));
  if (orphans.length > 0) {
    throw new SchemaLoadError(`history without a current schema: ${orphans.map((v) => v.source).join(', ')}`);
  }
  return versions;
}

function loadHistory(historyDir: string): SchemaVersion[] {
  let files: string[];
  try {
    files = readdirSync(historyDir).filter((file) => file.endsWith('.avsc'));
  } catch {
    return []; // no history directory: every record is at version 1
  }
  return files.sort().map((file) => {
    const match = HISTORY_FILE.exec(file);
    if (!match) {
      throw new SchemaLoadError(`${join(historyDir, file)}: history files must be named <Name>.v<N>.avsc`);
    }
    const path = join(historyDir, file);
    const version = compileSchemaVersion(readSchemaFile(path), Number(match[2]), path);
    expectName(version, match[1] ?? '');
    return version;
  });
}

function expectName(version: SchemaVersion, expected: string): void {
  if (version.name !== expected) {
    throw new SchemaLoadError(
      `${version.source} declares record ${version.fullName}; the file name says ${expected}`,
    );
  }
}
