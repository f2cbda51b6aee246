/**
 * Issue 36 item 5: a usage error prints the error, commander's did-you-mean and one line naming
 * the command's `--help` (not the ~110 lines of help that scrolled the error away); a config-file
 * typo gets a did-you-mean rather than a list of every field; the example key the `--config-file`
 * help shows is one the command's config file accepts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { configSchemaOf } from '../../cli/config/command-config.js';
import { loadConfig } from '../../cli/config/load-config.js';
import { buildProgram } from '../../cli/main.js';
import { runSpa } from '../cli/spa-process.js';

/** The lines a command printed to stderr. */
const linesOf = (stderr: string): readonly string[] => stderr.trimEnd().split('\n');

function fileWith(yamlText: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'spa-usage-')), 'config.yaml');
  writeFileSync(path, yamlText);
  return path;
}

/** Every command of the tree, with the words that name it (`env step`). */
function commandsOf(command: Command, path: readonly string[] = []): [string, Command][] {
  return command.commands.flatMap((sub) => {
    const subPath = [...path, sub.name()];
    return [[subPath.join(' '), sub] as [string, Command], ...commandsOf(sub, subPath)];
  });
}

describe('a usage error', () => {
  it('is the error, the did-you-mean and one line naming --help (spa run --sft-epoch 2)', async () => {
    const result = await runSpa(['run', '--sft-epoch', '2'], []);
    expect(result.code, result.stderr).toBe(2);
    expect(linesOf(result.stderr)).toEqual([
      "error: unknown option '--sft-epoch'",
      '(Did you mean --sft-epochs?)',
      "(run 'npx spa run --help' for the options)",
    ]);
    expect(result.stdout).toBe('');
  }, 30_000); // a CLI start-up on a busy 2-core box

  it("names the failing subcommand's own --help, however deep", async () => {
    const program = await buildProgram();
    const written: string[] = [];
    for (const [, command] of [['', program] as const, ...commandsOf(program)])
      command.exitOverride().configureOutput({ writeErr: (s) => written.push(s), writeOut: () => {} });
    expect(() => program.parse(['env', 'step', '--bogus'], { from: 'user' })).toThrow();
    expect(written.join('').trimEnd().split('\n')).toEqual([
      "error: unknown option '--bogus'",
      "(run 'npx spa env step --help' for the options)",
    ]);
    written.length = 0;
    expect(() => program.parse(['rn'], { from: 'user' })).toThrow();
    expect(written.join('').trimEnd().split('\n')).toEqual([
      "error: unknown command 'rn'",
      '(Did you mean run?)',
      "(run 'npx spa --help' for the commands)",
    ]);
  }, 120_000); // buildProgram() loads every command's modules
});

describe('a config-file typo', () => {
  it('gets a did-you-mean, not every field (sft-epoch: 2 in spa run --config-file)', async () => {
    const file = fileWith('sft-epoch: 2\n');
    const result = await runSpa(['run', '--config-file', file], []);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('sft-epoch: unknown field; did you mean sft-epochs? (line 1)');
    expect(linesOf(result.stderr).length).toBeLessThan(5);
  }, 30_000);
});

describe("the --config-file help's example", () => {
  it("is a key: value each command's config file accepts", async () => {
    const shown = commandsOf(await buildProgram()).flatMap(([name, command]) => {
      const option = command.options.find((o) => o.long === '--config-file');
      if (!option) return [];
      const example = /e\.g\. ([\w-]+: [^);]+)/.exec(option.description)?.[1];
      return [{ name, command, example }];
    });
    expect(shown.map(({ name, example }) => [name, example])).toEqual([
      ['run', 'sft-group-size: 8'],
      ['generate', 'group-size: 8'],
    ]);
    for (const { command, example } of shown)
      expect(() => loadConfig(fileWith(`${example}\n`), configSchemaOf(command))).not.toThrow();
  }, 120_000); // buildProgram() loads every command's modules
});
