/**
 * `npm run bench -- trainer [--models tiny-cells,tiny] [--steps n] [--batch-size n] [--max-length n]
 * [--lr x] [--rounds n] [--warmup-steps n] [--micro-batch n] [--loss-every k] [--rows file]`:
 * SFT tokens/s of `spa_trainer.sft` beside TRL's `SFTTrainer`, on the same model folder, the
 * same rows, window, batch size, learning rate, schedule and steps, in one run. Goal ≥ 1.0×.
 *
 * Rows: SPA world-model SFT rows of `spa generate --env sokoban --policy oracle` (one JSONL file,
 * written once). The Python side (bench/python/sft_bench.py) trains exactly steps × batch-size of
 * them, one epoch, in spa's sampler order on both sides; TRL gets each row as the prompt and target
 * texts spa's encoder trains on, with completion-only loss, and checks that its tokenized rows
 * (ids and labels) are spa's. Tokens/s counts the non-padding tokens of the trained batches after
 * the first `--warmup-steps` steps, the same way on both sides.
 *
 * A shared 2-core machine's load drifts, so the two sides run in strict alternation, each in a
 * fresh process, `--rounds` times per model (default 3), the order swapping every round. The ratio
 * is spa ÷ TRL within a round; the figure is the median of those ratios, with their range. No
 * broker is needed. TRL is the trainer's optional `bench` extra; the suite says how to install it.
 */
import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { callPython, venvHasModule } from './python/venv.js';
import { loadAverage, median } from './stats.js';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const GOAL = 1.0;

export interface Options {
  readonly models: readonly string[];
  readonly steps: number;
  readonly batchSize: number;
  readonly maxLength: number;
  readonly lr: number;
  readonly rounds: number;
  readonly warmupSteps: number;
  readonly microBatch: number | undefined;
  readonly lossEvery: number;
  readonly rows: string | undefined;
}

/** One side's run, as sft_bench.py prints it. */
export interface SideRun {
  readonly side: 'spa' | 'trl';
  readonly tokens_per_s: number;
  readonly tokens: readonly number[];
  readonly losses: readonly (number | null)[];
  readonly notes: Readonly<Record<string, unknown>>;
  readonly torch_threads: number;
}

const USAGE =
  'expected --models a,b  --steps n  --batch-size n  --max-length n  --lr x  --rounds n  ' +
  '--warmup-steps n  --micro-batch n  --loss-every k  --rows file.jsonl';

function positive(flag: string, text: string | undefined, suite: string): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`bench ${suite}: ${flag} must be a positive integer, got "${text}"`);
  return value;
}

/** The suite's options; `suite` names the bench in error messages (trainer-share parses the same). */
export function parseArgs(args: readonly string[], suite = 'trainer'): Options {
  const o = {
    models: ['tiny-cells'] as readonly string[],
    steps: 24,
    batchSize: 4, // spa run's SFT batch (sftBatchSize in loop/configs.ts)
    maxLength: 512,
    lr: 1e-4,
    rounds: 3,
    warmupSteps: 2,
    microBatch: undefined as number | undefined,
    lossEvery: 4,
    rows: undefined as string | undefined,
  };
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    const value = args[++i];
    if (flag === '--models') o.models = (value ?? '').split(',').filter(Boolean);
    else if (flag === '--steps') o.steps = positive(flag, value, suite);
    else if (flag === '--batch-size') o.batchSize = positive(flag, value, suite);
    else if (flag === '--max-length') o.maxLength = positive(flag, value, suite);
    else if (flag === '--lr') o.lr = Number(value);
    else if (flag === '--rounds') o.rounds = positive(flag, value, suite);
    else if (flag === '--warmup-steps') o.warmupSteps = positive(flag, value, suite);
    else if (flag === '--micro-batch') o.microBatch = positive(flag, value, suite);
    else if (flag === '--loss-every') o.lossEvery = positive(flag, value, suite);
    else if (flag === '--rows') o.rows = value;
    else throw new Error(`bench ${suite}: unknown argument "${flag}"; ${USAGE}`);
  }
  if (o.warmupSteps >= o.steps)
    throw new Error(
      `bench ${suite}: --warmup-steps ${o.warmupSteps} leaves no timed step of --steps ${o.steps}`,
    );
  if (!(o.lr > 0)) throw new Error(`bench ${suite}: --lr must be a positive number`);
  if (o.models.length === 0) throw new Error(`bench ${suite}: --models names no model`);
  return o;
}

/**
 * `spa generate --policy oracle` world-model rows into `out`: one Sokoban trajectory per row
 * needed (oracle trajectories give one to three rows each), so there are at least `rows`.
 */
export function generateRows(rows: number, out: string): Promise<void> {
  const args = [join(repo, 'bin', 'spa.mjs'), 'generate', '--env', 'sokoban', '--policy', 'oracle'];
  args.push('--groups', String(rows), '--group-size', '1', '--batches', '1', '--out', out);
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: repo, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new Error(`spa generate exited ${code}:\n${err.slice(-2000)}`)),
    );
  });
}

export function sideArgs(side: 'spa' | 'trl', model: string, rows: string, o: Options): string[] {
  const args = [side, '--rows', rows, '--model', model, '--steps', String(o.steps)];
  args.push('--batch-size', String(o.batchSize), '--max-length', String(o.maxLength));
  args.push('--lr', String(o.lr), '--warmup-steps', String(o.warmupSteps));
  if (o.microBatch) args.push('--micro-batch', String(o.microBatch));
  return args;
}

/** The two loss curves side by side, every `every` steps (and the last). */
function lossTable(spa: SideRun, trl: SideRun, every: number): string {
  const lines = ['step  spa loss  TRL loss'];
  const fmt = (x: number | null | undefined) => (x == null ? 'n/a' : x.toFixed(4)).padStart(8);
  for (let s = 1; s <= spa.losses.length; s++) {
    if (s % every === 0 || s === 1 || s === spa.losses.length)
      lines.push(`${String(s).padStart(4)}  ${fmt(spa.losses[s - 1])}  ${fmt(trl.losses[s - 1])}`);
  }
  return lines.join('\n');
}

async function benchModel(model: string, rows: string, o: Options): Promise<number[]> {
  const runs: { spa: SideRun; trl: SideRun; first: string }[] = [];
  for (let round = 0; round < o.rounds; round++) {
    const order: ('spa' | 'trl')[] = round % 2 === 0 ? ['spa', 'trl'] : ['trl', 'spa'];
    const got: Partial<Record<'spa' | 'trl', SideRun>> = {};
    for (const side of order)
      got[side] = await callPython<SideRun>('sft_bench.py', sideArgs(side, model, rows, o));
    const spa = got.spa as SideRun;
    const trl = got.trl as SideRun;
    runs.push({ spa, trl, first: order[0] as string });
    console.log(
      `${model} round ${round + 1}/${o.rounds} (${order.join(' then ')}): spa ${spa.tokens_per_s.toFixed(0)} tok/s, ` +
        `TRL ${trl.tokens_per_s.toFixed(0)} tok/s, spa ÷ TRL ${(spa.tokens_per_s / trl.tokens_per_s).toFixed(2)}×; ${loadAverage()}`,
    );
  }
  const first = runs[0] as (typeof runs)[number];
  const ratios = runs.map((r) => r.spa.tokens_per_s / r.trl.tokens_per_s);
  const tokens = first.spa.tokens.slice(o.warmupSteps).reduce((a, b) => a + b, 0);
  const sameTokens = runs.every((r) => r.spa.tokens.join() === r.trl.tokens.join());
  console.log(
    [
      `${model}: TRL ${String(first.trl.notes.trl)}, optimizer ${String(first.trl.notes.optimizer)}, ` +
        `micro-batch: TRL ${String(first.trl.notes.micro_batch)}, spa ${String(first.spa.notes.micro_batch)}, torch threads ${first.spa.torch_threads}`,
      `  rows tokenized by TRL exactly as by spa (ids and labels): ${String(first.trl.notes.rows_tokenized_as_spa)}; ` +
        `per-step token counts equal on both sides: ${sameTokens ? 'yes' : 'NO'}; ` +
        `TRL's own num_tokens agrees: ${first.trl.notes.num_tokens_agrees === true ? 'yes' : 'NO'}`,
      `  timed: ${tokens} non-padding tokens per side per round (steps ${o.warmupSteps + 1}–${o.steps}); ` +
        `both sides tokenize every row before their first step (not timed)`,
      `  spa loss: ${String(first.spa.notes.loss)}`,
      `  TRL loss: ${String(first.trl.notes.loss)}`,
      `  tokens/s, median of ${o.rounds} rounds: spa ${median(runs.map((r) => r.spa.tokens_per_s)).toFixed(0)}, ` +
        `TRL ${median(runs.map((r) => r.trl.tokens_per_s)).toFixed(0)}`,
      `  spa ÷ TRL: ${median(ratios).toFixed(2)}× (median of ${o.rounds} rounds; range ` +
        `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}); goal ≥ ${GOAL.toFixed(1)}×: ` +
        `${median(ratios) >= GOAL ? 'met' : 'NOT met'}`,
      `  loss curves (round 1; both sides see the same rows in the same order from the same weights):`,
      lossTable(first.spa, first.trl, o.lossEvery)
        .split('\n')
        .map((l) => `    ${l}`)
        .join('\n'),
    ].join('\n'),
  );
  return ratios;
}

/** Entry point of the `trainer` bench suite. */
export async function run(args: string[]): Promise<void> {
  const o = parseArgs(args);
  if (!(await venvHasModule('trl'))) {
    console.error(
      "bench trainer: TRL is not installed in trainer/.venv. It is the trainer's optional `bench` extra " +
        "(trainer/pyproject.toml): trainer/.venv/bin/pip install 'trl>=1.13'",
    );
    process.exitCode = 2;
    return;
  }
  const rows = o.rows ?? join(await mkdtemp(join(tmpdir(), 'spa-bench-trainer-')), 'rows.jsonl');
  if (!o.rows) await generateRows(o.steps * o.batchSize, rows);
  console.log(
    `spa_trainer.sft vs TRL SFTTrainer: models ${o.models.join(', ')}; rows ${rows} ` +
      `(spa generate --env sokoban --policy oracle); ${o.steps} steps of ${o.batchSize} rows, window ${o.maxLength} ` +
      `(left-truncated), AdamW lr ${o.lr} betas (0.9, 0.95) wd 0.01, cosine with 10% warm-up, clip 1.0, fp32 CPU; ` +
      `first ${o.warmupSteps} steps untimed; ${o.rounds} alternating rounds; ${loadAverage()}`,
  );
  for (const model of o.models) await benchModel(model, rows, o);
  console.log(loadAverage());
  console.log(busyNote());
}

/**
 * A warning when the 1-minute load average says other work shared the cores: the bench itself
 * keeps about one core busy, so more than the core count means its figures are not idle-box ones.
 */
function busyNote(): string {
  const [oneMinute = 0] = loadavg();
  return oneMinute > cpus().length
    ? `note: load average ${oneMinute.toFixed(2)} on ${cpus().length} cores, other work shared the machine: ` +
        'these are not idle-box figures'
    : `load average ${oneMinute.toFixed(2)} on ${cpus().length} cores`;
}
