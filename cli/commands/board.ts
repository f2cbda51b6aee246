import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { trainerPython } from '../../loop/trainer-process.js';
import { port, UsageError } from '../options.js';
import { LAST_RUN, newestRun, runIdArgument } from '../run-topics.js';

interface BoardOptions {
  run: string;
  runsDir: string;
  port?: number;
}

/** TensorBoard's folder in a run (loop/trainers.ts `boardOf`: one TensorBoard run per stage under it). */
const BOARD_FOLDER = 'tensorboard';

/**
 * The folder TensorBoard shows for `--run <run>`: `<runs-dir>/<id>/tensorboard`, whose folders are
 * the run's stages (a ppo-check's `--out` folder itself: its arms' runs are folders under it), or
 * with `last` the newest run folder that has TensorBoard logs. A usage error names the runs that
 * have them when there is none.
 */
export function boardFolder(runsDir: string, run: string): string {
  const root = resolve(runsDir);
  const folders = existsSync(root)
    ? readdirSync(root).filter((id) => statSync(join(root, id)).isDirectory() && hasBoard(join(root, id)))
    : [];
  const known = `runs with TensorBoard logs in ${runsDir}: ${folders.join(', ') || 'none'}`;
  const id = run === LAST_RUN ? newestRun(folders, root) : run;
  if (id === undefined) throw new UsageError(`--run last: ${known}`);
  const folder = join(root, id);
  if (!existsSync(folder) || !hasBoard(folder))
    throw new UsageError(`--run ${run}: no ${join(runsDir, id, BOARD_FOLDER)} (${known})`);
  return existsSync(join(folder, BOARD_FOLDER)) ? join(folder, BOARD_FOLDER) : folder;
}

/** Whether `folder` (a run, or a ppo-check's out folder whose arms are runs) has TensorBoard logs. */
function hasBoard(folder: string): boolean {
  if (existsSync(join(folder, BOARD_FOLDER))) return true;
  return readdirSync(folder).some((name) => existsSync(join(folder, name, BOARD_FOLDER)));
}

/** A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? done(address.port) : fail(new Error('no port')),
      );
    });
  });
}

/** Resolves once `url` answers (TensorBoard has loaded), or rejects after `seconds`. */
async function answers(url: string, seconds: number, alive: () => boolean): Promise<void> {
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until && alive()) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`TensorBoard did not answer at ${url} within ${seconds} s`);
}

/**
 * `spa board`: TensorBoard (the trainer venv's) for a run's folder on 127.0.0.1, on a free port
 * unless `--port`; prints its address once it answers and runs until Ctrl-C.
 */
export function registerBoardCommand(program: Command): void {
  program
    .command('board')
    .description(
      "show a run's curves in TensorBoard (SFT, PPO, evaluations) on 127.0.0.1, printing its address",
    )
    .option(
      '--run <id>',
      'the run (its folder under --runs-dir; a ppo-check --out folder too), or last',
      runIdArgument,
      LAST_RUN,
    )
    .option('--runs-dir <dir>', 'where run folders are', 'runs')
    .option('--port <port>', 'the port (default: a free one)', port('--port'))
    .action(async (options: BoardOptions) => {
      const folder = boardFolder(options.runsDir, options.run);
      const python = trainerPython();
      const chosen = options.port ?? (await freePort());
      const args = [
        '-m',
        'tensorboard.main',
        '--logdir',
        folder,
        '--host',
        '127.0.0.1',
        '--port',
        String(chosen),
      ];
      const child = spawn(python, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
      const ended = new Promise<number>((done) => child.on('close', (code) => done(code ?? 1)));
      let running = true;
      void ended.then(() => (running = false));
      process.once('SIGINT', () => child.kill('SIGINT'));
      process.once('SIGTERM', () => child.kill('SIGTERM'));
      const url = `http://127.0.0.1:${chosen}/`;
      try {
        await answers(url, 120, () => running);
      } catch (error) {
        child.kill('SIGTERM');
        throw new Error(
          `${(error as Error).message}; its output: ${stderr.trim().split('\n').slice(-3).join(' | ')}`,
        );
      }
      console.log(`TensorBoard of ${folder}: ${url} (Ctrl-C stops it)`);
      process.exitCode = await ended;
    });
}
