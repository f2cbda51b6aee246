/**
 * `npm run bench -- envs [--seconds n] [--rounds n] [--no-python]`: env steps/s (step + render of
 * the new state, random actions, reset from the paper's puzzle pool at done, fixed seeds) and
 * Sokoban rooms/s, in TypeScript on one thread, printed beside the Python references of
 * bench/python/envs_reference.py measured in the same run (gymnasium's FrozenLake; RAGEN's Sokoban
 * step over gym_sokoban's and RAGEN's Sudoku step, both copied statement for statement; the room
 * generator of docs/spa-envs.md#sokoban-generator). Goal: ≥ 30× the Python reference per core.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Rng } from '../envs/rng.js';
import { spaPuzzles } from '../envs/puzzles.js';
import { spaEnv } from '../envs/registry.js';
import { generateRoom } from '../envs/sokoban/generator.js';
import { SPA_SOKOBAN } from '../envs/sokoban/variants.js';
import type { EnvName, Environment } from '../envs/types.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const PYTHON_SCRIPT = join(ROOT, 'bench', 'python', 'envs_reference.py');
const GOAL_RATIO = 30;

/** Runs `body(batch)` until `seconds` passed; ops per second. */
function timed(seconds: number, batch: number, body: (n: number) => void): number {
  let done = 0;
  const start = performance.now();
  for (;;) {
    body(batch);
    done += batch;
    const elapsed = (performance.now() - start) / 1000;
    if (elapsed >= seconds) return done / elapsed;
  }
}

/** A random action the env accepts: an id 1..4, or a Sudoku move string `"r,c,v"` in range. */
function randomAction(env: Environment, rng: Rng): number | string {
  if (env.actionNames !== null) return rng.int(1, env.actionNames.length);
  return `${rng.int(1, 4)},${rng.int(1, 4)},${rng.int(1, 4)}`;
}

/**
 * Folded over every render so the text is really built: V8 may hand back a lazy concatenation
 * (rope) that is only flattened when read, while Python's `str` is always materialised.
 */
let renderChecksum = 0;

/** Steps/s of one env over the paper's puzzles (the same pool the Python reference uses). */
export function measureSteps(name: EnvName, seconds: number): number {
  const pool = [...spaPuzzles(name).keys()].map((seed) => spaEnv(name, seed));
  const rng = new Rng(0);
  let index = 0;
  let env = (pool[0] as Environment).clone();
  return timed(seconds, 1024, (n) => {
    for (let i = 0; i < n; i++) {
      const { done } = env.step(randomAction(env, rng));
      const text = env.render();
      renderChecksum = (renderChecksum + text.charCodeAt(text.length >> 1)) | 0;
      if (done) {
        index = (index + 1) % pool.length;
        env = (pool[index] as Environment).clone();
      }
    }
  });
}

/**
 * Sokoban rooms/s of our generator (SPA's 6×6, 1 box). `filtered` adds our BFS solution-length filter;
 * without it the work matches RAGEN's `generate_room`.
 */
export function measureRooms(seconds: number, filtered: boolean): number {
  let seed = 0;
  return timed(seconds, 8, (n) => {
    for (let i = 0; i < n; i++) {
      generateRoom(seed++, SPA_SOKOBAN, filtered ? {} : { maxSolutionLength: null });
    }
  });
}

function importsGymnasium(python: string): boolean {
  if (!existsSync(python)) return false;
  return spawnSync(python, ['-c', 'import gymnasium, numpy'], { stdio: 'ignore' }).status === 0;
}

/**
 * A Python with gymnasium + numpy: $SPA_BENCH_PYTHON, the trainer's venv, or bench/.venv, which is
 * created (`python3 -m venv` + `pip install gymnasium numpy`) when none exists. Null if that fails.
 */
function findPython(): string | null {
  const candidates = [
    process.env.SPA_BENCH_PYTHON,
    join(ROOT, 'trainer', '.venv', 'bin', 'python'),
    join(ROOT, 'bench', '.venv', 'bin', 'python'),
  ].filter((p): p is string => p !== undefined && p !== '');
  const found = candidates.find(importsGymnasium);
  if (found) return found;
  const venv = join(ROOT, 'bench', '.venv');
  console.error(`bench envs: creating ${venv} with gymnasium + numpy for the Python reference…`);
  const steps: [string, string[]][] = [
    ['python3', ['-m', 'venv', venv]],
    [join(venv, 'bin', 'pip'), ['install', '-q', 'gymnasium', 'numpy']],
  ];
  for (const [command, args] of steps) {
    if (spawnSync(command, args, { stdio: 'inherit' }).status !== 0) return null;
  }
  const python = join(venv, 'bin', 'python');
  return importsGymnasium(python) ? python : null;
}

type PythonResults = Record<'frozenlake' | 'sokoban' | 'sudoku' | 'sokoban_rooms', number>;

function measurePython(python: string, seconds: number): PythonResults | string {
  const run = spawnSync(python, [PYTHON_SCRIPT, '--seconds', String(seconds)], {
    encoding: 'utf8',
    // One core for numpy too, so "per core" holds on both sides.
    env: { ...process.env, OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1', MKL_NUM_THREADS: '1' },
  });
  if (run.status !== 0) return `Python reference failed: ${run.stderr.trim().split('\n').pop() ?? ''}`;
  return JSON.parse(run.stdout) as PythonResults;
}

interface Options {
  readonly seconds: number;
  readonly python: boolean;
  readonly rounds: number;
}

function parseArgs(args: string[]): Options {
  let seconds = 3;
  let python = true;
  let rounds = 1;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--no-python') python = false;
    else if (args[i] === '--seconds') seconds = Number(args[++i]);
    else if (args[i] === '--rounds') rounds = Number(args[++i]);
    else {
      throw new Error(
        `bench envs: unknown argument "${args[i]}"; expected --seconds n, --rounds n, --no-python`,
      );
    }
  }
  if (!(seconds > 0)) throw new Error('bench envs: --seconds must be a positive number');
  if (!Number.isInteger(rounds) || rounds < 1) {
    throw new Error(`bench envs: --rounds must be a whole number ≥ 1, got ${rounds}`);
  }
  return { seconds, python, rounds };
}

const fmt = (x: number | undefined) => (x === undefined ? '—' : Math.round(x).toLocaleString('en-US'));

interface Row {
  readonly name: string;
  readonly measure: (seconds: number) => number;
  readonly key?: keyof PythonResults;
}

const ROWS: readonly Row[] = [
  { name: 'frozenlake step/s', measure: (s) => measureSteps('frozenlake', s), key: 'frozenlake' },
  { name: 'sokoban step/s', measure: (s) => measureSteps('sokoban', s), key: 'sokoban' },
  { name: 'sudoku step/s', measure: (s) => measureSteps('sudoku', s), key: 'sudoku' },
  { name: 'sokoban rooms/s', measure: (s) => measureRooms(s, false), key: 'sokoban_rooms' },
  { name: 'sokoban rooms/s (+BFS filter)', measure: (s) => measureRooms(s, true) },
];

/**
 * Entry point of the `envs` bench suite. With `--rounds n` the TS and Python measurements alternate
 * n times and each side keeps its best round, so a burst of load on a shared machine does not land
 * on one side only.
 */
export async function run(args: string[]): Promise<void> {
  const { seconds, python, rounds } = parseArgs(args);
  const interpreter = python ? findPython() : null;
  const ts: number[] = ROWS.map(() => 0);
  let reference: PythonResults | string = interpreter ? 'no round ran' : 'Python reference skipped';
  for (let round = 0; round < rounds; round++) {
    ROWS.forEach((row, i) => (ts[i] = Math.max(ts[i] as number, row.measure(seconds))));
    if (interpreter === null) continue;
    const measured = measurePython(interpreter, seconds);
    if (typeof measured === 'string') {
      reference = measured;
      break;
    }
    reference = typeof reference === 'string' ? measured : bestOf(reference, measured);
  }
  if (typeof reference === 'string') console.error(reference);
  console.log(
    `envs bench: ${seconds}s per measurement, one thread each, best of ${rounds} round(s); Python: ${interpreter ?? 'none'}`,
  );
  console.log(['env', 'TS ops/s', 'Python ops/s', 'ratio', `goal ≥ ${GOAL_RATIO}×`].join('\t'));
  ROWS.forEach((row, i) => {
    const py = typeof reference === 'string' || row.key === undefined ? undefined : reference[row.key];
    const ratio = py === undefined ? undefined : (ts[i] as number) / py;
    const verdict = ratio === undefined ? '—' : ratio >= GOAL_RATIO ? 'met' : 'NOT met';
    const ratioText = ratio === undefined ? '—' : `${ratio.toFixed(1)}×`;
    console.log([row.name, fmt(ts[i]), fmt(py), ratioText, verdict].join('\t'));
  });
}

function bestOf(a: PythonResults, b: PythonResults): PythonResults {
  return {
    frozenlake: Math.max(a.frozenlake, b.frozenlake),
    sokoban: Math.max(a.sokoban, b.sokoban),
    sudoku: Math.max(a.sudoku, b.sudoku),
    sokoban_rooms: Math.max(a.sokoban_rooms, b.sokoban_rooms),
  };
}
