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

/**
 * Edit distance with transpositions (optimal string alignment): the typos a user makes (a letter
 * missing, extra, wrong or two swapped) cost 1 each. Hand-written, as commander's own
 * `suggestSimilar` (which it uses for flags) is not exported and a dependency for 15 lines is not
 * worth it.
 */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** Most edits a suggestion may be away from the key (commander's flag suggestions allow 2 too). */
const MAX_EDITS = 2;

/**
 * The known keys closest to a misspelt one (all tied at the fewest edits, at most
 * {@link MAX_EDITS}, and fewer edits than half the key so a short key is not "close" to
 * everything); case and `_` for `-` are no edits.
 */
export function closestKeys(key: string, known: readonly string[]): readonly string[] {
  const plain = (s: string): string => s.toLowerCase().replaceAll('_', '-');
  const typed = plain(key);
  const scored = known
    .map((k) => ({ k, edits: editDistance(typed, plain(k)) }))
    .filter(({ k, edits }) => edits <= MAX_EDITS && edits < Math.max(typed.length, k.length) / 2);
  const fewest = Math.min(...scored.map(({ edits }) => edits));
  return scored.filter(({ edits }) => edits === fewest).map(({ k }) => k);
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
          // The fields are a command's ~50 options: a list of them all would bury the typo.
          const close = closestKeys(key, known);
          const hint = close.length > 0 ? `did you mean ${close.join(' or ')}?` : 'see --help for the fields';
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
