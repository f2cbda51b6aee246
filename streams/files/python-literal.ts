/**
 * Reads the Python-repr strings SPA stores in its `reward_model` and `extra_info` columns
 * (docs/spa-data.md#columns), e.g. `{'ground_truth': {'numbers': array([0, 0]), 'target': 0},
 * 'style': 'rule'}`, into plain values, so `spa export --format verl` can write them as structs.
 *
 * The grammar is the part of Python's literal syntax those columns use (JSON is a subset of it):
 * dicts, lists, tuples, strings in single or double quotes with backslash escapes, integers
 * (as bigint, so 64-bit values survive), floats, True/False/None, and NumPy's `array([...])`
 * repr, read as a list. Anything else throws, naming the position.
 */

/** A value read from a Python literal. */
export type PythonValue =
  | null
  | boolean
  | bigint
  | number
  | string
  | readonly PythonValue[]
  | { readonly [key: string]: PythonValue };

const ESCAPES: Readonly<Record<string, string>> = {
  n: '\n',
  t: '\t',
  r: '\r',
  '\\': '\\',
  "'": "'",
  '"': '"',
  '0': '\0',
};

/** Parses one Python literal; throws `SyntaxError` naming what was expected and where. */
export function parsePythonLiteral(text: string): PythonValue {
  let at = 0;
  const fail = (expected: string): never => {
    throw new SyntaxError(`expected ${expected} at character ${at} of ${JSON.stringify(text)}`);
  };
  const skip = () => {
    while (at < text.length && /\s/.test(text[at]!)) at++;
  };
  const take = (token: string): boolean => {
    skip();
    if (!text.startsWith(token, at)) return false;
    at += token.length;
    return true;
  };
  const items = <T>(close: string, item: () => T): T[] => {
    const out: T[] = [];
    while (!take(close)) {
      out.push(item());
      if (take(',')) continue;
      skip();
      if (!text.startsWith(close, at)) fail(`"," or "${close}"`);
    }
    return out;
  };
  const string = (): string => {
    const quote = text[at++]!;
    let out = '';
    while (text[at] !== quote) {
      if (at >= text.length) fail(`closing ${quote}`);
      const ch = text[at++]!;
      if (ch !== '\\') out += ch;
      else out += ESCAPES[text[at++] ?? ''] ?? fail('a known escape (\\n \\t \\r \\\\ \\\' \\" \\0)');
    }
    at++;
    return out;
  };
  const value = (): PythonValue => {
    skip();
    const ch = text[at];
    if (ch === "'" || ch === '"') return string();
    if (take('{'))
      return Object.fromEntries(
        items('}', () => {
          skip();
          const key = text[at] === "'" || text[at] === '"' ? string() : fail('a string key');
          if (!take(':')) fail('":"');
          return [key, value()] as const;
        }),
      );
    if (take('[')) return items(']', value);
    if (take('(')) return items(')', value);
    if (take('array(')) {
      const list = value();
      if (!Array.isArray(list) || !take(')')) fail('array([...])');
      return list;
    }
    for (const [word, literal] of [
      ['True', true],
      ['true', true],
      ['False', false],
      ['false', false],
      ['None', null],
      ['null', null],
    ] as const)
      if (take(word)) return literal;
    const number = /^-?\d+(\.\d*)?([eE][-+]?\d+)?/.exec(text.slice(at))?.[0];
    if (number === undefined) return fail('a value');
    at += number.length;
    return /[.eE]/.test(number) ? Number(number) : BigInt(number);
  };
  const result = value();
  skip();
  if (at < text.length) fail('the end');
  return result;
}
