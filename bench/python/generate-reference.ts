/**
 * TypeScript side of `generate_reference.py`: runs it in the trainer's venv (JSON in on stdin,
 * JSON out on the last stdout line) and builds the real SPA prompts both the ONNX-policy tests
 * and `npm run bench -- generate` feed to it.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChatTemplate } from '../../envs/protocol/chat-template.js';
import {
  SPA_MAX_ACTIONS_PER_TRAJ,
  buildMessages,
  instructionPrefix,
  type PromptMode,
} from '../../envs/protocol/index.js';
import { spaEnv } from '../../envs/registry.js';
import type { EnvName } from '../../envs/types.js';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const script = join(repo, 'bench', 'python', 'generate_reference.py');
const venvPython = join(repo, 'trainer', '.venv', 'bin', 'python');

/** The test/bench policy: a Hugging Face folder and its exported artifact folder. */
export interface ReferenceFixture {
  readonly model_dir: string;
  readonly artifact: string;
}

let venvReady: Promise<string> | undefined;

/**
 * `node scripts/setup-python.mjs` once per process: it creates or updates trainer/.venv and is
 * a quick stamp check when nothing changed.
 */
function ensureVenv(): Promise<string> {
  venvReady ??= run(process.execPath, [join(repo, 'scripts', 'setup-python.mjs')], '');
  return venvReady;
}

function run(command: string, args: readonly string[], stdin: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: join(repo, 'trainer'), stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`${command} ${args.join(' ')} exited ${code}:\n${err.slice(-2000)}`)),
    );
    child.stdin.end(stdin);
  });
}

/** `generate_reference.py <command> [args]` with `input` as JSON on stdin; its JSON answer. */
export async function callReference<T>(
  command: string,
  args: readonly string[] = [],
  input: unknown = {},
): Promise<T> {
  await ensureVenv();
  const out = await run(venvPython, [script, command, ...args], JSON.stringify(input));
  const last = out.trim().split('\n').at(-1) ?? '';
  return JSON.parse(last) as T;
}

/** The cached test policy (built on first use, ~30 s; keyed by the trainer sources). */
export function referenceFixture(): Promise<ReferenceFixture> {
  return callReference<ReferenceFixture>('fixture');
}

const ENVS: readonly EnvName[] = ['sokoban', 'frozenlake', 'sudoku'];

/**
 * `count` real first-turn SPA generation prompts on the paper's own puzzles, cycling Sokoban,
 * FrozenLake, Sudoku from seed 10000, rendered with `template` (the model's own). They hold
 * newlines, `√` (the symbol legends), en dashes and the template's special tokens as text.
 */
export function spaPrompts(template: ChatTemplate, count: number, mode: PromptMode = 'wm'): string[] {
  return Array.from({ length: count }, (_, i) => {
    const name = ENVS[i % ENVS.length] as EnvName;
    const env = spaEnv(name, 10000 + i);
    const budget = SPA_MAX_ACTIONS_PER_TRAJ[name];
    const prefix = instructionPrefix(env, mode, budget);
    return template.generationPrompt(
      buildMessages(prefix, [{ state: env.state(), actionsLeft: budget }], { mode }),
    );
  });
}

/** A running `generate_reference.py serve`: one JSON request line in, one JSON line out. */
export interface ReferenceServer {
  request<T>(message: unknown): Promise<T>;
  close(): Promise<void>;
}

/**
 * Starts `generate_reference.py serve --artifact A` with `prompts`, for timings taken in strict
 * alternation with this process (a shared machine's load drifts between separate runs).
 */
export async function referenceServer(
  artifact: string,
  prompts: readonly string[],
): Promise<ReferenceServer> {
  await ensureVenv();
  const child = spawn(venvPython, [script, 'serve', '--artifact', artifact], {
    cwd: join(repo, 'trainer'),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async <T>(): Promise<T> => {
    const line = await lines.next();
    if (line.done) throw new Error(`generate_reference.py serve ended:\n${err.slice(-2000)}`);
    return JSON.parse(line.value) as T;
  };
  const request = <T>(message: unknown): Promise<T> => {
    child.stdin.write(`${JSON.stringify(message)}\n`);
    return next<T>();
  };
  await request<{ ready: boolean }>({ prompts });
  const close = () =>
    new Promise<void>((resolve) => {
      child.on('close', () => resolve());
      child.stdin.end();
    });
  return { request, close };
}
