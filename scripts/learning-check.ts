/**
 * Learning check (issue item 6, reference §6 "self-belief SFT" ablation): does a small model
 * trained from scratch on ground-truth-annotated Sokoban rows learn the transition, and does it
 * clearly beat the same model trained on self-belief rows? Prints one table row per arm.
 *
 *   npx tsx scripts/learning-check.ts            (or: npm run learning-check)
 *
 * Arms, all trained for the same number of rows and steps from the same initial weights, all
 * scored on the same held-out ground-truth rows (puzzle seeds disjoint from training):
 * - gt: the oracle policy's episodes, `--annotation gt` (SPA's method). The oracle writes its
 *   plan in the thought, so the prefix up to `<prediction>` determines the next state.
 * - unchanged: the same rows with every prediction replaced by its own observation — the
 *   belief of a naive model that expects nothing to change. Only the annotation differs from gt.
 * - self-belief: the random policy's episodes, `--annotation self-belief`: the policy's own
 *   (empty) observation/prediction text kept, as `spa generate` writes it.
 * The oracle's own self-belief equals gt on deterministic Sokoban, so it is not an arm.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { runTrainerModule, trainerPython } from '../cli/run/trainer-process.js';
import type { SftRow } from '../schemas/generated/types.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TRAIN_SEED_BASE = 10000; // SPA's first training seed (reference §6)
const HELDOUT_SEED_BASE = 900000; // far above any training seed used here

/** Options of one learning check run. */
interface CheckOptions {
  puzzles: number;
  heldoutPuzzles: number;
  size: string;
  epochs: number;
  lr: string;
  maxLength: number;
  evalRows: number;
  fullPrefixRows: number;
  arms: string;
  out: string;
}

/** The scores `spa_trainer.learning_check` writes to `<arm>/metrics.json`. */
interface Scores {
  rows: number;
  exact_match: number;
  grid_exact_match: number;
  coords_exact_match: number;
  cell_accuracy: number;
  changed_cell_accuracy: number;
}

interface ArmMetrics extends Scores {
  arm: string;
  train_rows: number;
  params: number;
  final_loss: number;
  train_seconds: number;
  leaked_heldout_rows: number;
  full_prefix_exact_match?: number;
  full_prefix_rows?: number;
  unchanged_baseline: Scores;
}

const ARMS = ['gt', 'unchanged', 'self-belief'] as const;
type Arm = (typeof ARMS)[number];

function readRows(path: string): SftRow[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as SftRow);
}

function writeRows(path: string, rows: readonly SftRow[]): void {
  writeFileSync(path, rows.map((row) => JSON.stringify(row)).join('\n') + '\n');
}

/** `spa generate` into `out` (the documented CLI, so the check covers it too). */
function generate(out: string, args: readonly string[]): void {
  const argv = ['bin/spa.mjs', 'generate', '--env', 'sokoban', '--group-size', '1', '--batches', '1'];
  const result = spawnSync('node', [...argv, ...args, '--run-id', 'learning-check', '--out', out], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (result.status !== 0) throw new Error(`spa generate ${args.join(' ')} failed (exit ${result.status})`);
}

const OBSERVATION = /<observation>([\s\S]*?)<\/observation>/;
const PREDICTION = /(<prediction>)[\s\S]*?(<\/prediction>)/g;

/** A message whose predictions all say "nothing changes": each becomes the message's own
 * observation. A function replacement, so a state is never read as a `$1` pattern. */
function believeUnchanged(content: string): string {
  const observation = OBSERVATION.exec(content)?.[1];
  if (observation === undefined) return content;
  return content.replace(PREDICTION, (_m, open: string, close: string) => open + observation + close);
}

/** The unchanged-belief arm: gt rows with every assistant message's prediction replaced. */
function unchangedRows(rows: readonly SftRow[]): SftRow[] {
  return rows.map((row) => ({
    ...row,
    prompt: row.prompt.map((m) =>
      m.role === 'assistant' ? { ...m, content: believeUnchanged(m.content) } : m,
    ),
    response: believeUnchanged(row.response),
    annotation: 'unchanged-belief',
  }));
}

/** Writes every arm's training rows and the held-out rows; returns their paths. */
function prepareData(o: CheckOptions, dir: string): { heldout: string; train: Record<Arm, string> } {
  const file = (name: string): string => join(dir, `${name}.jsonl`);
  const puzzles = ['--groups', String(o.puzzles), '--seed-base', String(TRAIN_SEED_BASE)];
  generate(file('gt'), ['--policy', 'oracle', '--annotation', 'gt', ...puzzles]);
  const gt = readRows(file('gt'));
  writeRows(file('unchanged'), unchangedRows(gt));
  // Random episodes have ~4 turns each; keep as many rows as gt so every arm takes the same steps.
  generate(file('random-self-belief'), ['--policy', 'random', '--annotation', 'self-belief', ...puzzles]);
  writeRows(file('self-belief'), readRows(file('random-self-belief')).slice(0, gt.length));
  const heldoutPuzzles = ['--groups', String(o.heldoutPuzzles), '--seed-base', String(HELDOUT_SEED_BASE)];
  generate(file('heldout-all'), ['--policy', 'oracle', '--annotation', 'gt', ...heldoutPuzzles]);
  // Distinct seeds can build the same small room: drop held-out rows seen verbatim in training.
  const seen = new Set(gt.map((row) => row.response));
  const heldout = readRows(file('heldout-all')).filter((row) => !seen.has(row.response));
  writeRows(file('heldout'), heldout);
  console.error(
    `[learning-check] ${gt.length} gt rows; ${heldout.length} held-out rows not seen in training`,
  );
  return {
    heldout: file('heldout'),
    train: { gt: file('gt'), unchanged: file('unchanged'), 'self-belief': file('self-belief') },
  };
}

async function trainArm(o: CheckOptions, arm: Arm, train: string, heldout: string): Promise<ArmMetrics> {
  const out = join(o.out, arm);
  const args = [
    ...['--arm', arm, '--train', train, '--heldout', heldout, '--out', out, '--size', o.size],
    ...['--epochs', String(o.epochs), '--lr', o.lr, '--max-length', String(o.maxLength)],
    ...['--eval-rows', String(o.evalRows), '--full-prefix-rows', String(o.fullPrefixRows)],
  ];
  const python = trainerPython();
  await runTrainerModule(python, 'spa_trainer.learning_check', args, { label: arm }).done;
  return JSON.parse(readFileSync(join(out, 'metrics.json'), 'utf8')) as ArmMetrics;
}

const pct = (x: number | undefined): string => (x === undefined || Number.isNaN(x) ? '–' : x.toFixed(3));

/** The result table (markdown), one row per arm plus the copy-the-observation floor. */
function table(results: readonly ArmMetrics[]): string {
  const head =
    '| arm | train rows | next-state exact match | grid exact match | coordinate line exact match | cell accuracy | changed-cell accuracy | full-prefix exact match | final loss | train s |';
  const lines = [head, '|' + ' --- |'.repeat(10)];
  for (const r of results)
    lines.push(
      `| ${r.arm} | ${r.train_rows} | ${pct(r.exact_match)} | ${pct(r.grid_exact_match)} | ${pct(r.coords_exact_match)} | ${pct(r.cell_accuracy)} | ${pct(r.changed_cell_accuracy)} | ${r.full_prefix_rows ? `${pct(r.full_prefix_exact_match)} (${r.full_prefix_rows})` : '–'} | ${r.final_loss.toFixed(3)} | ${r.train_seconds} |`,
    );
  const first = results[0];
  if (first) {
    const b = first.unchanged_baseline;
    lines.push(
      `| (no model: next = observation) | – | ${pct(b.exact_match)} | ${pct(b.grid_exact_match)} | ${pct(b.coords_exact_match)} | ${pct(b.cell_accuracy)} | ${pct(b.changed_cell_accuracy)} | – | – | – |`,
    );
    lines.push(
      '',
      `Held out: ${first.rows} ground-truth rows (puzzle seeds from ${HELDOUT_SEED_BASE}, rows also in the gt ` +
        `training set removed; ${first.leaked_heldout_rows} left in by mistake). Model: ${first.params} parameters.`,
    );
  }
  return lines.join('\n');
}

async function main(argv: string[]): Promise<void> {
  const program = new Command('learning-check')
    .description('ground-truth vs self-belief world-model SFT on Sokoban, from scratch')
    .option('--puzzles <n>', 'training puzzles (one oracle episode each)', Number, 3200)
    .option('--heldout-puzzles <n>', 'held-out puzzles', Number, 300)
    .option('--size <name>', 'model size in spa_trainer.learning_check: tiny | small', 'tiny')
    .option('--epochs <n>', 'epochs over each arm', Number, 1)
    .option('--lr <lr>', 'peak learning rate', '3e-3')
    .option('--max-length <n>', 'training window in tokens (left-truncated)', Number, 256)
    .option('--eval-rows <n>', 'held-out rows scored per arm', Number, 200)
    .option('--full-prefix-rows <n>', 'rows for sft_metrics exact match on untruncated prefixes', Number, 32)
    .option('--arms <list>', `comma-separated subset of ${ARMS.join(',')}`, ARMS.join(','))
    .option('--out <dir>', 'run folder (data, per-arm metrics, table.md)', 'runs/learning-check')
    .parse(argv);
  const o = program.opts<CheckOptions>();
  const arms = o.arms.split(',').map((a) => a.trim());
  const unknown = arms.filter((a) => !(ARMS as readonly string[]).includes(a));
  if (unknown.length > 0)
    throw new Error(`--arms ${o.arms}: unknown ${unknown.join(', ')}; expected ${ARMS.join(', ')}`);
  o.out = resolve(o.out);
  const dataDir = join(o.out, 'data');
  mkdirSync(dataDir, { recursive: true });
  const data = prepareData(o, dataDir);
  const results: ArmMetrics[] = [];
  for (const arm of arms as Arm[]) results.push(await trainArm(o, arm, data.train[arm], data.heldout));
  const text = table(results);
  writeFileSync(join(o.out, 'table.md'), text + '\n');
  console.log(text);
}

await main(process.argv);
