/**
 * Where `spa export` reads SftRows from. A source is any `AsyncIterable<SftRow>`, so a Kafka
 * topic (spa.sft) can stand in for the file later without touching the writers.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Type, types } from 'avsc';
import { spaSchemas, type SftRow } from '../../schemas/index.js';
import { SPA_DATASET_COLUMNS } from './spa-dataset.js';

/** A stream of SftRows, e.g. from a JSON Lines file or (later) the spa.sft topic. */
export type SftRowSource = AsyncIterable<SftRow>;

/** A line of an SftRow file that is not a usable row; names the file and the 1-based line. */
export class SftRowLineError extends Error {
  constructor(
    readonly path: string,
    readonly line: number,
    readonly problem: string,
  ) {
    super(`${path}:${line}: ${problem}`);
    this.name = 'SftRowLineError';
  }
}

/** Called once per line read (1-based line number), for a progress meter. */
export type ReadProgress = (line: number) => void;

/**
 * The SftRows of a JSON Lines file as written by `spa generate --out`, one at a time (the file is
 * never held whole). Blank lines are skipped; any other line that is not JSON, or lacks one of
 * SPA's six columns with the schema's type, throws `SftRowLineError` naming the line.
 */
export async function* readSftRowsJsonl(path: string, onProgress?: ReadProgress): SftRowSource {
  const input = createReadStream(path, { encoding: 'utf8' });
  const lines = createInterface({ input, crlfDelay: Infinity });
  let lineNumber = 0;
  try {
    for await (const text of lines) {
      lineNumber++;
      onProgress?.(lineNumber);
      if (text.trim() === '') continue;
      yield parseSftRowLine(text, path, lineNumber);
    }
  } catch (error) {
    if (error instanceof SftRowLineError) throw error;
    // The file itself (missing, a directory, unreadable): name it and what was expected.
    const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new Error(
      `cannot read SftRow JSON Lines file ${path} (${reason}); expected the --out file of spa generate`,
    );
  } finally {
    lines.close();
    input.destroy();
  }
}

/** Parses one JSON line into an SftRow, checking SPA's six columns against the SftRow schema. */
export function parseSftRowLine(text: string, path: string, lineNumber: number): SftRow {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new SftRowLineError(path, lineNumber, `not JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SftRowLineError(path, lineNumber, 'not a JSON object; expected one SftRow per line');
  }
  const record = value as Record<string, unknown>;
  const problems = SPA_DATASET_COLUMNS.flatMap((name) => columnProblems(name, record[name]));
  if (problems.length > 0) {
    throw new SftRowLineError(path, lineNumber, `not an SftRow: ${problems.join('; ')}`);
  }
  // Only the six released columns are checked: provenance fields are not exported, so rows from
  // older writers (schemas/history) still export.
  return record as unknown as SftRow;
}

let columnTypes: Map<string, Type> | undefined;

/** The Avro type of each released column, taken from the SftRow schema (the one source of truth). */
function columnType(name: string): Type {
  columnTypes ??= new Map(
    (spaSchemas().current('SftRow').type as types.RecordType).fields.map((f) => [f.name, f.type]),
  );
  const type = columnTypes.get(name);
  if (!type) throw new Error(`SftRow schema has no field "${name}"`);
  return type;
}

function columnProblems(name: string, value: unknown): string[] {
  if (value === undefined) return [`${name} is missing`];
  const problems: string[] = [];
  columnType(name).isValid(value, {
    errorHook: (path, got, type) => {
      const where = [name, ...path].join('.');
      problems.push(`${where}: got ${JSON.stringify(got)}, expected ${JSON.stringify(type.schema())}`);
    },
  });
  return problems;
}
