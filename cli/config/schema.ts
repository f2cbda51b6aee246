/**
 * A small schema language for YAML config files: each spec checks one value and reports
 * problems with the path of the field that holds it (`groups`, `kafka.brokers[1]`), so an error
 * names the field the user wrote. Hand-written rather than zod/ajv (neither is a dependency):
 * the whole language is the handful of shapes CLI options take, and the messages must read
 * like the CLI's own (`must be a positive integer, got "x"`).
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
  /** What a valid value looks like, for messages and docs. */
  readonly expected: string;
  validate(value: unknown, path: ConfigPath, problems: ConfigProblem[]): T | undefined;
}

/** The value type a spec produces. */
export type SpecType<S> = S extends Spec<infer T> ? T : never;

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
export function scalar<T>(expected: string, parse: (value: unknown) => T): Spec<T> {
  return {
    expected,
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

/** An integer ≥ `min` (default 1: "a positive integer"). */
export function integer(min = 1): Spec<number> {
  const expected = min === 1 ? 'a positive integer' : `an integer ≥ ${min}`;
  return scalar(expected, (value) => {
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min)
      throw new Error(`must be ${expected}, got ${shown(value)}`);
    return value;
  });
}

/** Any text (numbers are not silently turned into text). */
export function text(): Spec<string> {
  return scalar('text', (value) => {
    if (typeof value !== 'string') throw new Error(`must be text, got ${shown(value)}`);
    return value;
  });
}

/** true or false. */
export function flag(): Spec<boolean> {
  return scalar('true or false', (value) => {
    if (typeof value !== 'boolean') throw new Error(`must be true or false, got ${shown(value)}`);
    return value;
  });
}

/** One of a fixed set of words. */
export function oneOf<T extends string>(choices: readonly T[]): Spec<T> {
  const expected = `one of ${choices.join(', ')}`;
  return scalar(expected, (value) => {
    if (typeof value === 'string' && (choices as readonly string[]).includes(value)) return value as T;
    throw new Error(`must be ${expected}, got ${shown(value)}`);
  });
}

/** A list whose items all match `item`. */
export function listOf<T>(item: Spec<T>): Spec<T[]> {
  return {
    expected: `a list of ${item.expected}`,
    validate(value, path, problems) {
      if (!Array.isArray(value)) {
        problems.push({ path, message: `must be a list of ${item.expected}, got ${shown(value)}` });
        return undefined;
      }
      const before = problems.length;
      const items = value.map((v, i) => item.validate(v, [...path, i], problems));
      return problems.length === before ? (items as T[]) : undefined;
    },
  };
}

type AnySpec = Spec<unknown>;

/** The object an {@link object} spec produces: required keys present, the others optional. */
export type ObjectType<F extends Record<string, AnySpec>, R extends keyof F> = {
  [K in R]: SpecType<F[K]>;
} & { [K in Exclude<keyof F, R>]?: SpecType<F[K]> };

/** The closest known key to a misspelt one (case/dash/underscore-insensitive), if any. */
function suggestion(key: string, known: readonly string[]): string | undefined {
  const squash = (s: string): string => s.toLowerCase().replace(/[-_]/g, '');
  return known.find((k) => squash(k) === squash(key));
}

/** A mapping with known fields; unknown fields are problems (typos must not be ignored). */
export function object<F extends Record<string, AnySpec>, R extends keyof F & string = never>(
  fields: F,
  required: readonly R[] = [],
): Spec<ObjectType<F, R>> {
  const known = Object.keys(fields);
  return {
    expected: 'a mapping of field: value',
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
      for (const key of required)
        if (!(key in value))
          problems.push({ path: [...path, key], message: `is required (${fields[key]!.expected})` });
      return problems.length === before ? (result as ObjectType<F, R>) : undefined;
    },
  };
}
