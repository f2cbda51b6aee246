/**
 * `npm run bench -- envs [--seconds n] [--no-python]`: env steps/s (step + render of the new state,
 * random actions, reset from the paper's puzzle pool at done, fixed seeds) and Sokoban rooms/s, in
 * TypeScript on one thread, printed beside the Python references of bench/python/envs_reference.py
 * measured in the same run (gymnasium's FrozenLake, gym_sokoban's step logic, RAGEN's Sudoku rules,
 * the §2.2 room generator). Goal: ≥ 30× the Python reference per core.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Rng } from '../envs/internal/rng.js';
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

function parseArgs(args: string[]): { seconds: number; python: boolean } {
  let seconds = 3;
  let python = true;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--no-python') python = false;
    else if (args[i] === '--seconds') seconds = Number(args[++i]);
    else throw new Error(`bench envs: unknown argument "${args[i]}"; expected --seconds n, --no-python`);
  }
  if (!(seconds > 0)) throw new Error('bench envs: --seconds must be a positive number');
  return { seconds, python };
}

const fmt = (x: number | undefined) => (x === undefined ? '—' : Math.round(x).toLocaleString('en-US'));

/** Entry point of the `envs` bench suite. */
export async function run(args: string[]): Promise<void> {
  const { seconds, python } = parseArgs(args);
  const rows: { name: string; ts: number; key?: keyof PythonResults }[] = [
    { name: 'frozenlake step/s', ts: measureSteps('frozenlake', seconds), key: 'frozenlake' },
    { name: 'sokoban step/s', ts: measureSteps('sokoban', seconds), key: 'sokoban' },
    { name: 'sudoku step/s', ts: measureSteps('sudoku', seconds), key: 'sudoku' },
    { name: 'sokoban rooms/s', ts: measureRooms(seconds, false), key: 'sokoban_rooms' },
    { name: 'sokoban rooms/s (+BFS filter)', ts: measureRooms(seconds, true) },
  ];
  const interpreter = python ? findPython() : null;
  const reference = interpreter ? measurePython(interpreter, seconds) : 'Python reference skipped';
  if (typeof reference === 'string') console.error(reference);
  console.log(`envs bench: ${seconds}s per measurement, one thread each; Python: ${interpreter ?? 'none'}`);
  console.log(['env', 'TS ops/s', 'Python ops/s', 'ratio', `goal ≥ ${GOAL_RATIO}×`].join('\t'));
  for (const row of rows) {
    const py = typeof reference === 'string' || row.key === undefined ? undefined : reference[row.key];
    const ratio = py === undefined ? undefined : row.ts / py;
    const verdict = ratio === undefined ? '—' : ratio >= GOAL_RATIO ? 'met' : 'NOT met';
    const ratioText = ratio === undefined ? '—' : `${ratio.toFixed(1)}×`;
    console.log([row.name, fmt(row.ts), fmt(py), ratioText, verdict].join('\t'));
  }
}
