/**
 * `spa board`: which run folder TensorBoard shows (`--run <id>|last`), and a real TensorBoard from
 * the trainer venv answering on the 127.0.0.1 address it prints.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { boardFolder } from '../../cli/commands/board.js';
import { trainerPython } from '../../loop/trainer-process.js';
import { spawnSpa } from './spa-process.js';

const runs = mkdtempSync(join(tmpdir(), 'spa-board-'));
afterAll(() => rmSync(runs, { recursive: true, force: true }));

/** A run folder with TensorBoard logs, changed at `at` (seconds since the epoch). */
function runFolder(id: string, at: number, board = true): string {
  const folder = join(runs, id);
  mkdirSync(board ? join(folder, 'tensorboard', 'sft') : folder, { recursive: true });
  utimesSync(folder, at, at);
  return folder;
}

describe('spa board', () => {
  const older = runFolder('run-older', 1_000);
  const newer = runFolder('run-newer', 2_000);
  runFolder('run-newest-no-board', 3_000, false);
  const check = join(runs, 'check');
  mkdirSync(join(check, 'check-wm', 'tensorboard'), { recursive: true });
  utimesSync(check, 500, 500);

  it('shows the named run, or with last the newest run that has TensorBoard logs', () => {
    expect(boardFolder(runs, 'run-older')).toBe(join(older, 'tensorboard')); // its stages are the runs
    expect(boardFolder(runs, 'last')).toBe(join(newer, 'tensorboard'));
    expect(boardFolder(runs, 'check')).toBe(check); // a ppo-check folder: its arms' runs
    expect(() => boardFolder(runs, 'run-newest-no-board')).toThrow(
      /--run run-newest-no-board: no .*run-newest-no-board\/tensorboard \(runs with TensorBoard logs in .*: .*run-newer/,
    );
    expect(() => boardFolder(join(runs, 'none'), 'last')).toThrow(
      '--run last: runs with TensorBoard logs in',
    );
  });

  it("starts TensorBoard on 127.0.0.1 and prints an address that answers with the run's scalars", async () => {
    // an event file as the trainers write it (torch's SummaryWriter): TensorBoard lists no empty run
    const write =
      'import sys; from torch.utils.tensorboard import SummaryWriter; w = SummaryWriter(sys.argv[1]); ' +
      "w.add_scalar('train/loss', 2.5, 1); w.add_scalar('train/loss', 1.25, 2); w.close()";
    execFileSync(trainerPython(), ['-c', write, join(older, 'tensorboard', 'sft')]);
    const board = spawnSpa(['board', '--runs-dir', runs, '--run', 'run-older'], []);
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        board.child.stdout?.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const found = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
          if (found) resolve(found[1]!);
        });
        void board.ended.then((r) => reject(new Error(`spa board ended: ${r.code} ${r.stderr}`)));
      });
      const response = await fetch(`${url}data/runs`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual(['sft']);
      const scalars = await fetch(`${url}data/plugin/scalars/scalars?run=sft&tag=train/loss`);
      const points = (await scalars.json()) as [number, number, number][];
      expect(points.map(([, step, value]) => [step, value])).toEqual([
        [1, 2.5],
        [2, 1.25],
      ]);
    } finally {
      board.child.kill('SIGINT');
      await board.ended;
    }
  }, 180_000);
});
