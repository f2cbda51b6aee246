/**
 * `npm run spa-check` at its smallest size, end to end on a real broker: two starts (format
 * warm-ups with seeds 1 and 2), every arm of each (wm, ppo and their learning-rate-0 controls) a
 * real `spa run`, the world-model probe of each start, and the pooled table written
 * (docs/spa-check.md).
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningBroker } from '../../infra/kafka/broker.js';
import { startTestBroker, stopTestBroker } from '../kafka/harness.js';

const ports = { port: 19660, controllerPort: 19661 };
let broker: RunningBroker;
let dir: string;

beforeAll(async () => {
  broker = await startTestBroker('spa-check', ports);
  dir = await mkdtemp(join(tmpdir(), 'spa-check-'));
});

afterAll(async () => {
  await stopTestBroker('spa-check', ports);
  if (dir) await rm(dir, { recursive: true, force: true });
});

const SMALLEST = [
  ...['--starts', '2', '--steps', '2', '--eval-every', '1', '--groups', '2', '--group-size', '2'],
  ...['--eval-puzzles', '2', '--eval-k', '2', '--warmup-puzzles', '8', '--sft-puzzles', '32'],
  ...['--sft-epochs', '1', '--max-new-tokens', '64'],
];

function spaCheck(out: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    ['node_modules/tsx/dist/cli.mjs', 'scripts/spa-check.ts', ...SMALLEST, '--out', out],
    {
      env: { ...process.env, KAFKA_BROKERS: broker.brokers.join(',') },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('npm run spa-check (smallest size)', () => {
  it('runs every arm of two starts, probes them and writes the pooled table', async () => {
    const out = join(dir, 'sc');
    const { code, stdout, stderr } = await spaCheck(out);
    expect(code, stderr.slice(-3000)).toBe(0);
    for (const start of ['s1', 's2'])
      for (const arm of ['wm', 'ppo', 'wm-control', 'control'])
        expect(existsSync(join(out, `sc-${start}-${arm}`, 'summary.json')), `${start}:${arm}`).toBe(true);
    const table = readFileSync(join(out, 'spa-check.md'), 'utf8');
    expect(stdout).toContain(table.trim().split('\n')[0]);
    for (const arm of ['wm', 'ppo', 'wm-control', 'control'])
      expect(table).toMatch(new RegExp(`^\\| ${arm} \\|`, 'm'));
    expect(table).toMatch(/\*\*SPA − RL-only \(paired, pooled\): [+−]\d+\.\d ± \d+\.\d\*\*/);
    // each probed model's score: the mean over the starts, then each start's (– when no row could be scored)
    const score = String.raw`(\d\.\d{3}|–)`;
    expect(table).toMatch(
      new RegExp(`^\\| after world-model SFT \\| ${score} \\(${score}, ${score}\\)`, 'm'),
    );
    const json = JSON.parse(readFileSync(join(out, 'spa-check.json'), 'utf8')) as {
      probes: Record<string, { next_state_exact_match: number | null }>[];
      formatValid: (number | null)[];
      arms: Record<string, { evaluations: { policy: string }[] }>;
    };
    expect(json.probes).toHaveLength(2);
    expect(json.formatValid.every((f) => f !== null && f >= 0 && f <= 1)).toBe(true);
    // each learning arm evaluated at steps 0, 1 and 2, besides the random floor
    expect(json.arms['s1:wm']!.evaluations.filter((e) => e.policy !== 'random')).toHaveLength(3);
    // the two starts are independent warm-ups: different seeds, different demonstration puzzles
    const first = (s: string) => readFileSync(join(out, `sc-${s}-wm`, 'warmup', 'metrics.json'), 'utf8');
    expect(first('s1')).not.toEqual(first('s2'));
    // a start acts at random in both prompt modes, whatever spa run's default explores
    const config = JSON.parse(readFileSync(join(out, 'sc-s1-wm', 'config.json'), 'utf8')) as {
      warmupExplore: number;
      warmupExploreModes: string[];
    };
    expect([config.warmupExplore, config.warmupExploreModes]).toEqual([1, ['wm', 'base-wm']]);
  });
});
