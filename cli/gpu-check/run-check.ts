/**
 * The `spa run` check: the whole loop at its smallest size on the device, end to end (oracle SFT
 * data on 8 puzzles, SFT, export, 2 PPO steps on 2 × 2 self-play episodes on onnxruntime-node with
 * the device's provider, evaluation of 1 puzzle), as a user runs it: `spa run --device <d>`, on
 * `KAFKA_BROKERS` or the local broker it starts on demand.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GpuRow } from './rows.js';

const spaBin = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'spa.mjs');

/** The smallest loop (`--config-file` keys, docs/cli.md). */
const SMALLEST = [
  'generator: oracle',
  'sft-groups: 8',
  'sft-group-size: 1',
  'sft-batches: 1',
  'sft-epochs: 1',
  'ppo-steps: 2',
  'ppo-groups-per-step: 2',
  'ppo-group-size: 2',
  'max-new-tokens: 64',
  'eval-puzzles: 1',
  'eval-k: 1',
];

interface RunSummary {
  readonly selfPlay?: { rollouts?: number };
  readonly evaluations?: readonly { policy: string; pass1: number }[];
}

/** Runs `spa run` in `folder` (its config, runs folder and log); one row. */
export async function spaRunRow(device: 'cpu' | 'cuda', folder: string): Promise<GpuRow> {
  const check = 'spa run';
  const config = join(folder, 'smallest.yaml');
  writeFileSync(config, [...SMALLEST, ''].join('\n'));
  const runId = `gpu-check-${Date.now()}`;
  const args = ['run', '--config-file', config, '--device', device, '--runs-dir', folder, '--run-id', runId];
  const started = Date.now();
  const { code, tail } = await new Promise<{ code: number | null; tail: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [spaBin, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let tail = '';
    child.stderr.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-3000)));
    child.on('error', reject);
    child.on('close', (exit) => resolve({ code: exit, tail }));
  });
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  const summaryFile = join(folder, runId, 'summary.json');
  if (code !== 0 || !existsSync(summaryFile))
    return {
      check,
      device,
      result: 'fail',
      figures: `exit ${code} after ${seconds} s`,
      detail: tail.trim().split('\n').slice(-3).join(' | '),
    };
  const summary = JSON.parse(readFileSync(summaryFile, 'utf8')) as RunSummary;
  const final = summary.evaluations?.at(-1);
  const figures =
    `${seconds} s end to end; ${summary.selfPlay?.rollouts ?? 0} PPO rollouts; ` +
    (final ? `final policy ${final.policy} Pass@1 ${final.pass1.toFixed(1)} (1 puzzle)` : 'no evaluation');
  return {
    check,
    device,
    result: final ? 'pass' : 'fail',
    figures,
    ...(final ? {} : { detail: summaryFile }),
  };
}
