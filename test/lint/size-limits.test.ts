/**
 * eslint.config.js's size limits (issue 34): production files at most 500 lines and functions
 * at most 80, blank lines and comments not counted; test/ is free; a listed offender may not grow.
 */
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const eslint = new ESLint();

/** A function of `lines` statements, with as many comment and blank lines between them. */
function functionOf(lines: number): string {
  const body = Array.from({ length: lines }, (_, i) => `  // step ${i}\n\n  total += ${i};`).join('\n');
  return `export function long(): number {\n  let total = 0;\n${body}\n  return total;\n}\n`;
}

/** The size rules `text` breaks as file `path` of the repository. */
async function sizeRulesBroken(text: string, path: string): Promise<string[]> {
  const [result] = await eslint.lintText(text, { filePath: path });
  return (result?.messages ?? []).map((m) => m.ruleId ?? '').filter((rule) => rule.startsWith('max-lines'));
}

describe('size limits', () => {
  it('a production function over 80 lines fails; comments and blank lines do not count', async () => {
    expect(await sizeRulesBroken(functionOf(70), 'streams/long.ts')).toEqual([]);
    expect(await sizeRulesBroken(functionOf(85), 'web/server/long.ts')).toEqual(['max-lines-per-function']);
  });

  it('a production file over 500 lines fails', async () => {
    const constants = Array.from({ length: 510 }, (_, i) => `export const c${i} = ${i};`).join('\n');
    expect(await sizeRulesBroken(`${constants}\n`, 'policies/constants.ts')).toEqual(['max-lines']);
  });

  it('tests are free of both limits', async () => {
    expect(await sizeRulesBroken(functionOf(200), 'test/web/long.test.ts')).toEqual([]);
  });

  it('a listed offender is capped at its length today (cli/commands/eval.ts: 124)', async () => {
    expect(await sizeRulesBroken(functionOf(110), 'cli/commands/eval.ts')).toEqual([]);
    expect(await sizeRulesBroken(functionOf(130), 'cli/commands/eval.ts')).toEqual([
      'max-lines-per-function',
    ]);
  });
});
