/**
 * Numbers and paths a careless user gives the CLI (issue 33 items 4 and 5): every numeric flag
 * and config field has a range checked before any work, with a message naming it; limits of
 * several flags together (a batch's episodes, the last puzzle seed, an Avro int) are checked up
 * front for every output; an output path that cannot be written fails at once; usage errors exit
 * 2 without a stack trace; and a large batch leaves the event loop free, so Ctrl-C still works.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command, type Option } from 'commander';
import { lastValueFrom, max, map } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { registerRunCommand } from '../../cli/commands/run.js';
import { configSchemaOf } from '../../cli/config/command-config.js';
import { ConfigError, parseConfig } from '../../cli/config/load-config.js';
import { buildProgram } from '../../cli/main.js';
import {
  checkEpisodeLimits,
  MAX_GROUPS,
  MAX_SEED,
  port,
  positiveInt,
  seedNumber,
  UsageError,
} from '../../cli/options.js';
import { envFactory } from '../../envs/registry.js';
import { episodeConfig, lastSeed } from '../../streams/episodes/episode-config.js';
import { episodes } from '../../streams/episodes/episodes.js';
import { builtinPolicy } from '../../policies/builtin.js';
import { runSpa, spawnSpa, type SpaResult } from '../cli/spa-process.js';

const tmp = (): string => mkdtempSync(join(tmpdir(), 'spa-flags-'));

/** Every option of every `spa` command, with the command's path (`spa env show`). */
function everyOption(command: Command, path = 'spa'): { where: string; option: Option }[] {
  return [
    ...command.options.map((option) => ({ where: path, option })),
    ...command.commands.flatMap((sub) => everyOption(sub, `${path} ${sub.name()}`)),
  ];
}

/** A usage error: exit 2, the message on stderr, no Node stack trace. */
function expectUsageError(result: SpaResult, message: string | RegExp): void {
  expect(result.code, result.stderr).toBe(2);
  if (typeof message === 'string') expect(result.stderr).toContain(message);
  else expect(result.stderr).toMatch(message);
  expect(result.stderr).not.toMatch(/^\s+at .*:\d+:\d+\)?$/m); // a stack frame
  expect(result.stderr).not.toContain('Unhandled');
}

describe('numeric parsers', () => {
  it('name the flag and the range, for huge, fractional, negative and empty values', () => {
    const groups = positiveInt('--groups', MAX_GROUPS);
    expect(() => groups('99999999999999999999')).toThrow(
      '--groups must be an integer in 1..100000, got "99999999999999999999"',
    );
    expect(() => groups('1e12')).toThrow('--groups must be an integer in 1..100000, got "1e12"');
    for (const bad of ['0', '-3', '2.5', '', ' ', 'NaN', 'Infinity']) expect(() => groups(bad)).toThrow();
    expect(groups('100000')).toBe(100_000);
    expect(() => port('--port')('70000')).toThrow('--port must be an integer in 0..65535, got "70000"');
    expect(port('--port')('0')).toBe(0);
    expect(() => seedNumber('--seed-base')(String(MAX_SEED + 1))).toThrow(
      '--seed-base must be an integer in 0..2147483647, got "2147483648"',
    );
  });

  it('bound every numeric option of every command, and say the range in --help', async () => {
    const numeric = everyOption(await buildProgram()).filter(({ option }) => {
      try {
        return typeof option.parseArg?.('1', undefined) === 'number';
      } catch {
        return false; // e.g. --warmup-explore needs ≤ 1, --split-val < 1: tried below with 0.5
      }
    });
    const fractional = everyOption(await buildProgram()).filter(({ option }) => {
      try {
        return (
          !numeric.some((n) => n.option === option) && typeof option.parseArg?.('0.5', undefined) === 'number'
        );
      } catch {
        return false;
      }
    });
    expect(numeric.length + fractional.length).toBeGreaterThan(40);
    for (const { where, option } of [...numeric, ...fractional]) {
      const flag = `${where} ${option.long ?? option.flags}`;
      for (const huge of ['1e12', '99999999999999999999'])
        expect(() => option.parseArg?.(huge, undefined), flag).toThrow(option.long!);
      expect(option.description, flag).toMatch(/\((\d+\.\.\d+|[-\d.]+ [<≤] [xp] [<≤] [\d.]+)\)/);
    }
  }, 120_000); // buildProgram() loads every command's modules

  it('check a config file field with the same range: sft-groups: 1e12 names the field and its line', () => {
    const run = new Command('spa');
    registerRunCommand(run, async () => {});
    const schema = configSchemaOf(run.commands[0]!);
    let problems: readonly string[] = [];
    try {
      parseConfig(
        'ppo-steps: 2\nsft-groups: 1e12\nppo-group-size: 99999999999999999999\n',
        schema,
        'run.yaml',
      );
    } catch (error) {
      if (error instanceof ConfigError) problems = error.problems;
    }
    expect(problems).toEqual([
      'sft-groups: must be an integer in 1..100000, got "1000000000000" (line 2)',
      'ppo-group-size: must be an integer in 1..1000, got "100000000000000000000" (line 3)',
    ]);
  });
});

describe('limits of several flags together', () => {
  const flags = {
    groups: '--groups',
    groupSize: '--group-size',
    batches: '--batches',
    seedBase: '--seed-base',
  };

  it('keep the last puzzle seed an Avro int, on the train and the val split', () => {
    const train = episodeConfig({ env: 'sokoban', seedBase: MAX_SEED, groups: 2, batches: 1 });
    expect(() => checkEpisodeLimits(train, flags)).toThrow(UsageError);
    expect(() => checkEpisodeLimits(train, flags)).toThrow(
      'puzzle seeds must stay in 0..2147483647 (an Avro int), but --seed-base 2147483647 with --groups 2 × --batches 1 reaches 2147483648',
    );
    // train seeds advance by the groups each batch: 5 batches of 1000 from MAX_SEED − 4999 fit exactly
    const atTheEdge = episodeConfig({ env: 'sokoban', seedBase: MAX_SEED - 4999, groups: 1000, batches: 5 });
    expect(lastSeed(atTheEdge)).toBe(MAX_SEED);
    expect(() => checkEpisodeLimits(atTheEdge, flags)).not.toThrow();
    expect(() => checkEpisodeLimits({ ...atTheEdge, batches: 6 }, flags)).toThrow(/reaches 2147484647/);
    // val restarts at its base every batch
    expect(() => checkEpisodeLimits({ ...atTheEdge, split: 'val', batches: 1000 }, flags)).not.toThrow();
  });

  it('bound the episodes of one batch (groups × group size)', () => {
    const big = episodeConfig({ env: 'sokoban', groups: 100_000, groupSize: 2 });
    expect(() => checkEpisodeLimits(big, flags)).toThrow(
      '--groups × --group-size (the episodes of a batch, played side by side) must be at most 100000, got 100000 × 2 = 200000',
    );
  });

  it('lastSeed is the highest seed the episode loop plays', async () => {
    for (const split of ['train', 'val'] as const) {
      const config = episodeConfig({
        env: 'frozenlake',
        split,
        seedBase: 40,
        groups: 3,
        groupSize: 1,
        batches: 2,
      });
      const policy = builtinPolicy('random', { mode: 'wm', seed: 0 });
      const highest = await lastValueFrom(
        episodes(config, envFactory({ name: 'frozenlake' }), policy).pipe(
          map((record) => record.seed),
          max(),
        ),
      );
      expect(highest, split).toBe(lastSeed(config));
    }
  });
});

describe('the episode loop', () => {
  it('leaves the event loop free while it sets up a large batch (timers, a Ctrl-C handler)', async () => {
    // 20,000 Sokoban puzzles are seconds of synchronous work: a timer must still fire on time.
    const config = episodeConfig({ env: 'sokoban', groups: 20_000, groupSize: 1, batches: 1 });
    const policy = builtinPolicy('random', { mode: 'wm', seed: 0 });
    const subscription = episodes(config, envFactory({ name: 'sokoban' }), policy).subscribe();
    const started = performance.now();
    const firedAfter = await new Promise<number>((resolve) =>
      setTimeout(() => resolve(performance.now() - started), 50),
    );
    subscription.unsubscribe();
    expect(firedAfter).toBeLessThan(500);
  });
});

describe('spa commands (spawned)', () => {
  it('spa generate --groups 99999999999999999999 is a usage error naming --groups', async () => {
    const out = join(tmp(), 'x.jsonl');
    expectUsageError(
      await runSpa(['generate', '--env', 'sokoban', '--groups', '99999999999999999999', '--out', out], []),
      '--groups must be an integer in 1..100000, got "99999999999999999999"',
    );
  });

  it('a seed beyond the Avro int fails before any episode, for JSON Lines output too', async () => {
    const out = join(tmp(), 'x.jsonl');
    const args = ['generate', '--env', 'sokoban', '--seed-base', '2147483647', '--groups', '2'];
    expectUsageError(
      await runSpa([...args, '--batches', '1', '--out', out], []),
      /spa: puzzle seeds must stay in 0\.\.2147483647 \(an Avro int\), but --seed-base 2147483647 with --groups 2 × --batches 1 reaches 2147483648/,
    );
    expect(existsSync(out)).toBe(false);
  });

  it('--out in a directory that does not exist fails before any episode runs', async () => {
    const started = Date.now();
    const result = await runSpa(['generate', '--env', 'sokoban', '--out', '/nonexistent/dir/x.jsonl'], []);
    expectUsageError(
      result,
      'spa: --out /nonexistent/dir/x.jsonl: the directory /nonexistent/dir does not exist',
    );
    expect(result.stderr).not.toContain('[generate]'); // no progress line: nothing was played
    expect(Date.now() - started).toBeLessThan(20_000); // start-up only (the default run is 1280 episodes)
  });

  it('--out that is a directory, spa export --out and spa eval --out are checked the same way', async () => {
    const dir = tmp();
    expectUsageError(
      await runSpa(['generate', '--env', 'sokoban', '--out', dir], []),
      `spa: --out ${dir} is a directory; give a file path`,
    );
    const rows = join(dir, 'rows.jsonl');
    writeFileSync(rows, '');
    expectUsageError(
      await runSpa(['export', '--in', rows, '--out', '/nonexistent/dir/wm_train.parquet'], []),
      'spa: --out /nonexistent/dir/wm_train.parquet: the directory /nonexistent/dir does not exist',
    );
    const file = join(dir, 'a-file');
    writeFileSync(file, '');
    expectUsageError(
      await runSpa(
        ['eval', '--policy', 'random', '--env', 'sokoban', '--out', join(file, 'report.json')],
        [],
      ),
      `spa: --out ${join(file, 'report.json')}: ${file} is not a directory`,
    );
  });

  it('spa tap --web --port 70000 names --port and its range, before connecting anywhere', async () => {
    expectUsageError(
      await runSpa(['tap', '--web', '--port', '70000'], ['127.0.0.1:1']),
      '--port must be an integer in 0..65535, got "70000"',
    );
  });

  it('a config file with sft-groups: 1e12 is refused with the field and its line, exit 2', async () => {
    const file = join(tmp(), 'run.yaml');
    writeFileSync(file, 'sft-groups: 1e12\n');
    expectUsageError(
      await runSpa(['run', '--config-file', file], ['127.0.0.1:1']),
      'sft-groups: must be an integer in 1..100000, got "1000000000000" (line 1)',
    );
    writeFileSync(file, 'ppo-steps: 100000\nppo-groups-per-step: 100000\nppo-group-size: 1\n');
    expectUsageError(
      await runSpa(['run', '--config-file', file], ['127.0.0.1:1']),
      'lower --ppo-groups-per-step or --ppo-steps',
    );
  });

  it('Ctrl-C ends a long spa generate --out file within 2 s', async () => {
    const out = join(tmp(), 'x.jsonl');
    const args = [
      'generate',
      '--env',
      'sokoban',
      '--groups',
      '100000',
      '--group-size',
      '1',
      '--batches',
      '1',
    ];
    const { child, ended } = spawnSpa([...args, '--out', out], []);
    // past start-up (about 1-2 s): setting up its 100,000 episodes takes far longer
    await new Promise((resolve) => setTimeout(resolve, 4000));
    expect(child.exitCode).toBe(null);
    const interrupted = Date.now();
    child.kill('SIGINT');
    const result = await ended;
    expect(Date.now() - interrupted).toBeLessThan(2000);
    expect(result.code === 130 || result.signal === 'SIGINT', JSON.stringify(result)).toBe(true);
  });
});
