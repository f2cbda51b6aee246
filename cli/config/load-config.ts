/**
 * One YAML config format for the CLI: `loadConfig(path, schema)` reads a file with the `yaml`
 * package and checks it against a {@link Spec}; every problem names the field path and the line
 * it is on, all problems at once.
 */
import { readFileSync } from 'node:fs';
import { isNode, LineCounter, parseDocument } from 'yaml';
import { formatPath, type ConfigProblem, type Spec } from './schema.js';

/** A config file that cannot be used; `problems` lists each field that is wrong. */
export class ConfigError extends Error {
  constructor(
    readonly file: string,
    readonly problems: readonly string[],
  ) {
    super(`config file ${file} is not valid:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

/** Parses YAML text and validates it; `file` only names the source in messages. */
export function parseConfig<T>(yamlText: string, schema: Spec<T>, file = '<config>'): T {
  const lineCounter = new LineCounter();
  const doc = parseDocument(yamlText, { lineCounter, prettyErrors: false });
  const lineOf = (offset: number): number => lineCounter.linePos(offset).line;
  if (doc.errors.length > 0)
    throw new ConfigError(
      file,
      doc.errors.map((e) => `line ${lineOf(e.pos[0])}: YAML syntax: ${e.message.split('\n')[0]}`),
    );
  const problems: ConfigProblem[] = [];
  // An empty file is an empty mapping: every field keeps its default.
  const value = schema.validate(doc.toJS() ?? {}, [], problems);
  if (problems.length > 0 || value === undefined) {
    throw new ConfigError(
      file,
      problems.map(({ path, message }) => {
        // The line of the value, or of the closest enclosing node that exists (missing fields).
        let node: unknown;
        for (let n = path.length; n >= 0 && !isNode(node); n--) node = doc.getIn(path.slice(0, n), true);
        const range = isNode(node) ? node.range : undefined;
        return `${formatPath(path)}: ${message}${range ? ` (line ${lineOf(range[0])})` : ''}`;
      }),
    );
  }
  return value;
}

/** Reads and validates a YAML config file; throws {@link ConfigError} naming each bad field. */
export function loadConfig<T>(path: string, schema: Spec<T>): T {
  let yamlText: string;
  try {
    yamlText = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(path, [`cannot read the file: ${(error as Error).message}`]);
  }
  return parseConfig(yamlText, schema, path);
}
