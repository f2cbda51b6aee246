/**
 * The checks of a YAML config file: a mapping of known fields (`object`), each field a `scalar`
 * checked by a parse function, every problem reported with the path of the field that holds it,
 * so an error names the field the user wrote. Hand-written rather than zod/ajv (neither is a
 * dependency): the fields are a command's options (cli/config/command-config.ts builds the specs
 * from their command-line parsers), so the messages read like the CLI's own.
 */

/** Where a value sits in the document: keys and list indexes from the root. */
export type ConfigPath = readonly (string | number)[];

/** One thing wrong with a config file. */
export interface ConfigProblem {
  readonly path: ConfigPath;
  readonly message: string;
}

/** Checks a value; returns it converted, or undefined after adding problems. */
export interface Spec<T> {
  validate(value: unknown, path: ConfigPath, problems: ConfigProblem[]): T | undefined;
}

/** `a.b[2]` for a path; `(root)` for the document itself. */
export function formatPath(path: ConfigPath): string {
  if (path.length === 0) return '(root)';
  return path
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? part : `.${part}`))
    .join('');
}

/** How a bad value is shown after `got`. */
export function shown(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (value !== null && typeof value === 'object') return 'a mapping';
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

/** A leaf spec from a parse function that throws an Error whose message says what is wrong. */
export function scalar<T>(parse: (value: unknown) => T): Spec<T> {
  return {
    validate(value, path, problems) {
      try {
        return parse(value);
      } catch (error) {
        problems.push({ path, message: (error as Error).message });
        return undefined;
      }
    },
  };
}

type AnySpec = Spec<unknown>;

/** The closest known key to a misspelt one (case/dash/underscore-insensitive), if any. */
function suggestion(key: string, known: readonly string[]): string | undefined {
  const squash = (s: string): string => s.toLowerCase().replace(/[-_]/g, '');
  return known.find((k) => squash(k) === squash(key));
}

/** A mapping with known fields, each optional; unknown fields are problems (typos must not be ignored). */
export function object(fields: Readonly<Record<string, AnySpec>>): Spec<Record<string, unknown>> {
  const known = Object.keys(fields);
  return {
    validate(value, path, problems) {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        problems.push({ path, message: `must be a mapping of field: value, got ${shown(value)}` });
        return undefined;
      }
      const before = problems.length;
      const result: Record<string, unknown> = {};
      for (const [key, raw] of Object.entries(value)) {
        const spec = fields[key];
        if (!spec) {
          const close = suggestion(key, known);
          const hint = close ? `did you mean ${close}?` : `known fields: ${known.join(', ')}`;
          problems.push({ path: [...path, key], message: `unknown field; ${hint}` });
          continue;
        }
        const checked = spec.validate(raw, [...path, key], problems);
        if (checked !== undefined) result[key] = checked;
      }
      return problems.length === before ? result : undefined;
    },
  };
}
