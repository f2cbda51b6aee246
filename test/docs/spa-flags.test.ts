/**
 * The `spa` commands the docs show take the flags they show. Every `spa <command> --flag …` in a
 * backticked span or a code-block line of README.md, docs/*.md and the folders' READMEs (also as
 * `npx spa`, `node bin/spa.mjs`) must name a flag that `spa <command> --help` lists, so a renamed
 * or removed option fails here until the docs follow. docs/experiments/ keeps the commands of its day.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SPA = join(ROOT, 'bin/spa.mjs');
/** Commands with subcommands of their own. */
const NESTED = new Set(['env']);
/** `spa <command> [<subcommand>]` and what follows, up to a shell separator, a comment or a table pipe. */
const INVOCATION = /(?:^|[\s`(])spa ((?:[a-z][\w-]*)(?: [a-z][\w-]*)?)([^|;#&`\n]*)/g;

interface Use {
  readonly where: string;
  readonly command: string;
  readonly flags: string[];
}

/** Every `spa …` invocation with flags, in backticked spans and fenced code lines of the reference docs. */
function invocations(): Use[] {
  const listing = execFileSync('git', ['ls-files', '-z', '*.md'], { cwd: ROOT, encoding: 'utf8' });
  const uses: Use[] = [];
  for (const path of listing.split('\0')) {
    if (path === '' || path.startsWith('docs/experiments/') || !existsSync(join(ROOT, path))) continue;
    const lines = readFileSync(join(ROOT, path), 'utf8').split('\n');
    let fenced = false;
    lines.forEach((line, i) => {
      if (line.startsWith('```')) fenced = !fenced;
      const pieces = fenced ? [line] : [...line.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
      for (const piece of pieces) {
        for (const [, words, rest] of piece.matchAll(INVOCATION)) {
          const [command, sub] = words!.split(' ');
          const name = NESTED.has(command!) && sub !== undefined ? `${command} ${sub}` : command!;
          const flags = [
            ...`${NESTED.has(command!) ? '' : (sub ?? '')} ${rest}`.matchAll(/(?<=^|\s)--[a-z][\w-]*/g),
          ].map((m) => m[0]);
          if (flags.length > 0) uses.push({ where: `${path}:${i + 1}`, command: name, flags });
        }
      }
    });
  }
  return uses;
}

describe('spa flags in the docs', () => {
  const uses = invocations();
  const help = new Map<string, Set<string> | null>();

  beforeAll(async () => {
    const run = promisify(execFile);
    const commands = [...new Set(uses.map((u) => u.command))];
    await Promise.all(
      commands.map(async (command) => {
        try {
          const { stdout } = await run('node', [SPA, ...command.split(' '), '--help'], { cwd: ROOT });
          help.set(command, new Set([...stdout.matchAll(/--[a-z][\w-]*/g)].map((m) => m[0])));
        } catch {
          help.set(command, null); // not a command
        }
      }),
    );
  }, 120_000);

  it('finds spa commands with flags in the docs', () => {
    expect(uses.length).toBeGreaterThan(20);
    expect(uses.some((u) => u.command === 'run')).toBe(true);
  });

  it('every flag shown is one that spa <command> --help lists', () => {
    const unknown: string[] = [];
    for (const { where, command, flags } of uses) {
      const known = help.get(command);
      if (known === null) unknown.push(`${where}: spa ${command} is no command`);
      else for (const flag of flags) if (!known!.has(flag)) unknown.push(`${where}: spa ${command} ${flag}`);
    }
    expect(unknown).toEqual([]);
  });
});
