import { spawnSync } from 'node:child_process';
import { PassThrough, Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { runEnvPlay } from '../../cli/commands/env-play.js';
import { loadEnvState, showText } from '../../cli/commands/env-show.js';
import { runEnvStep, stepLine, stripDescription } from '../../cli/commands/env-step.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const SEED_10000 = '######\n#O####\n#__###\n#X_###\n#_P_##\n######';
const SEED_10000_TEXT = `${SEED_10000}\nPlayer (P) is at (4,2); box (X) is at (3,1); target (O) is at (1,1).`;

function spa(args: string[], input: string): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, ['bin/spa.mjs', ...args], {
    cwd: repoRoot,
    input,
    encoding: 'utf8',
    timeout: 60_000,
  });
}

describe('spa env step: bad lines give {"error"} naming the problem', () => {
  const cases: [string, string, RegExp][] = [
    ['not JSON', '{"env":', /not JSON/],
    ['empty line', '', /empty line/],
    ['an array', '[1]', /not a JSON object/],
    ['env missing', '{"render":"x","actions":[]}', /env is required/],
    ['unknown env', '{"env":"chess","render":"x","actions":[]}', /unknown env "chess".*sokoban/],
    ['misspelt field', '{"env":"sokoban","render":"x","actoins":[]}', /unknown field "actoins"/],
    ['field of another env', `{"env":"sokoban","render":"x","actions":[],"seed":1}`, /seed.*frozenlake only/],
    ['actions not strings', `{"env":"sokoban","render":"x","actions":[1]}`, /array of strings/],
    ['render missing', '{"env":"sokoban","actions":[]}', /render must be/],
    ['slippery not boolean', '{"env":"frozenlake","render":"P__G","actions":[],"slippery":"no"}', /slippery/],
    ['seed not integer', '{"env":"frozenlake","render":"P__G","actions":[],"seed":1.5}', /seed must be/],
    ['two players', '{"env":"sokoban","render":"#####\\n#PPX#\\n#O__#\\n#####","actions":[]}', /2 players/],
    ['no goal', '{"env":"frozenlake","render":"P___","actions":[]}', /goal/i],
    [
      'board disagrees with clue',
      '{"env":"sudoku","render":"| 4 . . 3 | 3 1 . . | . 4 . 2 | 2 3 4 1 ","puzzle":"| 1 . . 3 | 3 1 . . | . 4 . 2 | 2 3 4 1 ","actions":[]}',
      /clue/,
    ],
  ];
  for (const [name, line, message] of cases) {
    it(name, () => {
      const out = stepLine(line);
      expect(out).toEqual({ error: expect.stringMatching(message) });
    });
  }

  it('keeps going after a bad line and flushes one line per input line', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const lines: string[] = [];
    output.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
    const done = runEnvStep(input, output);
    input.write('oops\n');
    input.write(`${JSON.stringify({ env: 'sokoban', render: SEED_10000, actions: ['Left'] })}\n`);
    // Streaming: both answers arrive before the input ends.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(lines).toHaveLength(2);
    input.end();
    await done;
    expect(JSON.parse(lines[0] as string)).toHaveProperty('error');
    expect(JSON.parse(lines[1] as string)).toMatchObject({ rewards: [-0.1], done: false });
  });
});

describe('spa env step: semantics', () => {
  it('accepts the render with its coordinate sentence and strips it', () => {
    expect(stripDescription(SEED_10000_TEXT)).toBe(SEED_10000);
    expect(stripDescription('| . 1 | \nEmpty position to be filled is at (1,1).\n')).toBe('| . 1 | ');
    expect(stepLine(JSON.stringify({ env: 'sokoban', render: SEED_10000_TEXT, actions: [] }))).toEqual(
      stepLine(JSON.stringify({ env: 'sokoban', render: SEED_10000, actions: [] })),
    );
  });

  it('drops unknown actions, executes the rest, solves seed 10000 with 10.9', () => {
    const out = stepLine(
      JSON.stringify({
        env: 'sokoban',
        render: SEED_10000,
        actions: ['left', 'Jump', 'UP', ' Up', 'Up', 'Down'],
      }),
    );
    expect(out).toMatchObject({
      rewards: [-0.1, -0.1, 10.9],
      done: true,
      success: true,
      dropped: ['Jump', ' Up'],
    });
  });

  it('FrozenLake slips are seeded: same seed, same path; without a seed it is deterministic too', () => {
    const line = (extra: object) =>
      JSON.stringify({
        env: 'frozenlake',
        render: '____\n____\n___O\nGP__',
        actions: ['Up', 'Left', 'Up'],
        ...extra,
      });
    expect(stepLine(line({ seed: 7 }))).toEqual(stepLine(line({ seed: 7 })));
    expect(stepLine(line({}))).toEqual(stepLine(line({ seed: 0 })));
    const paths = new Set([1, 2, 3, 4, 5, 6, 7, 8].map((seed) => JSON.stringify(stepLine(line({ seed })))));
    expect(paths.size).toBeGreaterThan(1);
  });
});

describe('spa env show / play', () => {
  it('show prints render, blank line, description and the shortest solution', () => {
    const text = showText(loadEnvState('sokoban', { seed: 10000, spaPuzzle: true }));
    expect(text).toBe(
      `${SEED_10000}\n\nPlayer (P) is at (4,2); box (X) is at (3,1); target (O) is at (1,1).\n` +
        'Shortest solution: 3 actions (Left, Up, Up)\n',
    );
    expect(showText(loadEnvState('sudoku', { seed: 123, spaPuzzle: true }))).toContain(
      '| 3 2 4 1 | . 4 . . | 2 . 3 . | 4 3 . 2 \n\nEmpty positions to be filled are at',
    );
    expect(() => loadEnvState('sokoban', { seed: 10000, spaPuzzle: true, variant: '8x8-2box' })).toThrow(
      /SPA puzzles exist only for sokoban variant 6x6-1box/,
    );
  });

  it('play reads piped lines, skips unknown pieces, stops when solved', async () => {
    const output = new PassThrough();
    let text = '';
    output.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    const env = loadEnvState('sokoban', { seed: 10000, spaPuzzle: true });
    const result = await runEnvPlay(env, Readable.from(['Left\n', 'up || jump\n', 'Up\n', 'Down\n']), output);
    expect(result).toEqual({ done: true, success: true, actionsExecuted: 3 });
    expect(text).toContain('"jump" is not an action');
    expect(text).toContain('Up: reward 10.9');
    expect(text).toContain('Solved!');
  });

  it('play quits on q, and the CLI runs end to end with piped input', { timeout: 60_000 }, () => {
    const run = spa(['env', 'play', 'frozenlake', '--seed', '123', '--spa-puzzle'], 'Left\nq\nUp\n');
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.startsWith('____\n_OOP\nGO__\nO___\n')).toBe(true);
    expect(run.stdout).toContain('Left: reward 0');
    expect(run.stdout).not.toContain('Up: reward');
    const show = spa(['env', 'show', 'sokoban', '--seed', 'ten'], '');
    expect(show.status).toBe(2);
    expect(show.stderr).toContain('--seed must be an integer in 0..2147483647, got "ten"');
  });

  it('takes the env as --env as well as the argument, and says when they differ or neither is given', () => {
    const byOption = spa(['env', 'play', '--env', 'frozenlake', '--seed', '123', '--spa-puzzle'], 'q\n');
    expect(byOption.status, byOption.stderr).toBe(0);
    expect(byOption.stdout.startsWith('____\n_OOP\nGO__\nO___\n')).toBe(true);
    const both = spa(['env', 'show', 'sokoban', '--env', 'frozenlake'], '');
    expect(both.status).not.toBe(0);
    expect(both.stderr).toContain('the env is given twice and differs: "sokoban" and --env "frozenlake"');
    const neither = spa(['env', 'show'], '');
    expect(neither.status).not.toBe(0);
    expect(neither.stderr).toContain('name the environment: sokoban, frozenlake, sudoku');
  });

  it('play hints at the row,col,value form for a Sudoku move written otherwise', async () => {
    const output = new PassThrough();
    let text = '';
    output.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
    const env = loadEnvState('sudoku', { seed: 123, spaPuzzle: true });
    await runEnvPlay(env, Readable.from(['(1,3):4\n', 'q\n']), output);
    expect(text).toContain(
      '(1,3):4: reward 0.0 valid=false effective=false (write row,col,value, e.g. 1,3,4; did you mean 1,3,4?)',
    );
  });
});
