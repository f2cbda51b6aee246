import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { configSchemaOf, withConfigFile } from '../../cli/config/command-config.js';
import { ConfigError, loadConfig, parseConfig } from '../../cli/config/load-config.js';
import { closestKeys } from '../../cli/config/schema.js';
import { nonNegativeInt, oneOf, positiveInt } from '../../cli/options.js';

/** The config-file schema of a command like `spa generate` (its options' own parsers). */
const schema = configSchemaOf(
  new Command('demo')
    .option('--env <env>', 'environment', oneOf('--env', ['sokoban', 'frozenlake', 'sudoku'] as const))
    .option('--groups <n>', 'groups', positiveInt('--groups', 100))
    .option('--seed-base <n>', 'first seed', nonNegativeInt('--seed-base', 1000))
    .option('--mask-transitions', 'mask', false),
);

/** The problems a YAML text has, one line each. */
function problems(yamlText: string): readonly string[] {
  try {
    parseConfig(yamlText, schema, 'gen.yaml');
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe('parseConfig', () => {
  it('returns the parsed values of a valid file', () => {
    const config = parseConfig('env: sudoku\ngroups: 4\nmask-transitions: false\n', schema);
    expect(config).toEqual({ env: 'sudoku', groups: 4, 'mask-transitions': false });
  });

  it('names the field, the bad value and the line of every problem at once', () => {
    expect(problems('env: chess\ngroups: x\nseed-base: -1\nmask-transitions: yes\n')).toEqual([
      'env: must be one of sokoban, frozenlake, sudoku, got "chess" (line 1)',
      'groups: must be an integer in 1..100, got "x" (line 2)',
      'seed-base: must be an integer in 0..1000, got "-1" (line 3)',
      'mask-transitions: must be true or false, got "yes" (line 4)',
    ]);
  });

  it('refuses unknown fields (with a suggestion), lists and mappings as values, and non-mappings', () => {
    expect(problems('env: sokoban\nGroups: 2\nbatchez: 1\nseed_bsae: 3\n')).toEqual([
      'Groups: unknown field; did you mean groups? (line 2)',
      'batchez: unknown field; see --help for the fields (line 3)',
      'seed_bsae: unknown field; did you mean seed-base? (line 4)',
    ]);
    expect(problems('env: sokoban\ngroups: [1, 2]\n')).toEqual([
      'groups: must be a single value (text, a number or true/false), got a list (line 2)',
    ]);
    expect(problems('- env: sokoban\n')).toEqual([
      '(root): must be a mapping of field: value, got a list (line 1)',
    ]);
  });

  it('reports YAML syntax errors with their line', () => {
    const [problem] = problems('env: sokoban\ngroups: [1, 2\n');
    expect(problem).toMatch(/^line \d+: YAML syntax: /);
  });

  it('loadConfig names a file it cannot read', () => {
    expect(() => loadConfig('/nonexistent/gen.yaml', schema)).toThrow(
      /config file \/nonexistent\/gen\.yaml is not valid:\n {2}cannot read the file: ENOENT/,
    );
  });
});

/** A command like `spa generate`: a required option, a parsed number, a flag. */
function demoCommand(seen: (options: Record<string, unknown>) => void): Command {
  const command = new Command('demo')
    .exitOverride()
    .configureOutput({ writeErr: () => {}, writeOut: () => {} })
    .requiredOption('--env <env>', 'environment')
    .option('--groups <n>', 'groups', positiveInt('--groups', 100), 32)
    .option('--mask-transitions', 'mask', false)
    .action((options: Record<string, unknown>) => seen(options));
  return withConfigFile(command);
}

function fileWith(yamlText: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'spa-config-')), 'config.yaml');
  writeFileSync(path, yamlText);
  return path;
}

describe('closestKeys', () => {
  const known = ['sft-epochs', 'sft-lr', 'ppo-epochs', 'ppo-group-size', 'sft-group-size', 'env'];

  it('suggests the keys at the fewest edits (a letter missing, extra, wrong or two swapped)', () => {
    expect(closestKeys('sft-epoch', known)).toEqual(['sft-epochs']);
    expect(closestKeys('sft-eopchs', known)).toEqual(['sft-epochs']); // a swap is one edit
    expect(closestKeys('SFT_LR', known)).toEqual(['sft-lr']); // case and _ are no edits
    expect(closestKeys('groupz', ['groups', 'group', 'group-size'])).toEqual(['groups', 'group']);
  });

  it('suggests nothing more than 2 edits away, nor for a short key most of which is wrong', () => {
    expect(closestKeys('epochs', known)).toEqual([]);
    expect(closestKeys('ab', ['env', 'ab-c'])).toEqual([]);
    expect(closestKeys('en', known)).toEqual(['env']);
  });
});

describe('--config-file', () => {
  it("help's example is a key of the command: its group size, or its first option", () => {
    const help = (command: Command): string | undefined =>
      command.options.find((o) => o.long === '--config-file')?.description;
    expect(help(demoCommand(() => undefined))).toContain('e.g. env: <value>');
    const withGroups = new Command('g').option('--groups <n>').option('--group-size <n>');
    expect(help(withConfigFile(withGroups))).toContain('e.g. group-size: 8');
  });

  it('fills options from the file; the command line wins; a required option may come from the file', async () => {
    let options: Record<string, unknown> = {};
    const file = fileWith('env: sudoku\ngroups: 3\nmask-transitions: true\n');
    await demoCommand((o) => (options = o)).parseAsync(['--config-file', file], { from: 'user' });
    expect(options).toMatchObject({ env: 'sudoku', groups: 3, maskTransitions: true });
    await demoCommand((o) => (options = o)).parseAsync(['--config-file', file, '--groups', '7'], {
      from: 'user',
    });
    expect(options).toMatchObject({ env: 'sudoku', groups: 7 });
  });

  it("checks file values with the option's own parser and names the field", async () => {
    const file = fileWith('env: sudoku\ngroups: x\n');
    const run = demoCommand(() => undefined).parseAsync(['--config-file', file], { from: 'user' });
    await expect(run).rejects.toThrow(CommanderError);
    await expect(
      demoCommand(() => undefined).parseAsync(['--config-file', file], { from: 'user' }),
    ).rejects.toThrow('groups: must be an integer in 1..100, got "x" (line 2)');
  });

  it('still requires a required option that is in neither place', async () => {
    const file = fileWith('groups: 2\n');
    await expect(
      demoCommand(() => undefined).parseAsync(['--config-file', file], { from: 'user' }),
    ).rejects.toThrow(`required option '--env <env>' not specified`);
    await expect(demoCommand(() => undefined).parseAsync([], { from: 'user' })).rejects.toThrow(
      `required option '--env <env>' not specified`,
    );
  });

  it('spa generate reads its options from a YAML file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'spa-generate-config-'));
    const out = join(dir, 'rows.jsonl');
    const good = fileWith(`env: frozenlake\ngroups: 1\ngroup-size: 2\nbatches: 1\nout: ${out}\n`);
    const ok = spawnSync(process.execPath, ['bin/spa.mjs', 'generate', '--config-file', good], {
      encoding: 'utf8',
    });
    expect(ok.status, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout).counts.trajectories).toBe(2);
    expect(readFileSync(join(dir, 'rows.trajectories.jsonl'), 'utf8').trim().split('\n')).toHaveLength(2);
    const bad = fileWith('env: frozenlake\ngroups: x\nout: x.jsonl\n');
    const failed = spawnSync(process.execPath, ['bin/spa.mjs', 'generate', '--config-file', bad], {
      encoding: 'utf8',
    });
    expect(failed.status).toBe(2);
    expect(failed.stderr).toContain('groups: must be an integer in 1..100000, got "x" (line 2)');
  }, 60_000); // two CLI start-ups on a busy 2-core box
});
