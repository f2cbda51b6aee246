/**
 * `npm run bench -- trainer-share [--models tiny-cells] [--steps n] [--rounds n] …` (the flags of
 * `bench trainer`): SFT tokens/s of `spa_trainer.sft` beside another CPU-bound process, against its
 * fair share of the machine (issue 43 item 2). The same rows, model, window, batch, schedule and
 * steps as bench trainer's spa side (bench/python/sft_bench.py `spa`), in four arms:
 *
 *   alone          the machine otherwise idle, with the OpenMP variables the loop gives a trainer
 *                  there (openMpEnv: none, OpenMP's default)
 *   alone passive  idle, OMP_WAIT_POLICY=PASSIVE: what passive threads cost where nothing competes
 *   default        beside a busy process, OMP_WAIT_POLICY unset: the trainer before loop/openmp-env.ts
 *   loop env       beside a busy process, with the OpenMP variables the loop gives a trainer beside
 *                  one busy core (openMpEnv: OMP_WAIT_POLICY=PASSIVE)
 *
 * The busy process is a Node spin loop (one thread, no CPU affinity) started before a busy arm's
 * trainer and killed when it ends. Fair share = alone tok/s × free cores ÷ cores, free cores being
 * the cores minus the one busy process (on 2 cores: alone × 1/2); each busy arm's figure is its
 * tok/s ÷ the fair share of the same round. The arms run in strict alternation, each in a fresh
 * process, `--rounds` times (the order rotating every round); printed: the median and range over
 * the rounds, the load average before starting and after every round, and the goal (the loop-env
 * arm ≥ 0.8× its fair share). No broker, no TRL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openMpEnv } from '../loop/openmp-env.js';
import { procStat } from '../infra/process/proc-stat.js';
import { callPython } from './python/venv.js';
import { loadAverage, median, spread } from './stats.js';
import { generateRows, parseArgs, sideArgs, type Options, type SideRun } from './trainer.js';

/** The goal: the trainer beside the busy process keeps at least this share of its fair share. */
export const GOAL = 0.8;

/** CPU-bound processes the busy arms start beside the trainer. */
const BUSY = 1;

type Arm = 'alone' | 'passive' | 'default' | 'loop';
const ARMS: readonly Arm[] = ['alone', 'passive', 'default', 'loop'];

/** The OpenMP environment of each arm: "today's commit before the change" unsets the policy. */
const WITHOUT_POLICY: NodeJS.ProcessEnv = { OMP_WAIT_POLICY: undefined };
const armEnv: Record<Arm, NodeJS.ProcessEnv> = {
  // What the loop gives a trainer when the user sets nothing (loop/trainers.ts), idle and beside the busy process.
  alone: { ...WITHOUT_POLICY, ...openMpEnv({}, 0) },
  passive: { OMP_WAIT_POLICY: 'PASSIVE' },
  default: WITHOUT_POLICY,
  loop: { ...WITHOUT_POLICY, ...openMpEnv({}, BUSY) },
};

const armName: Record<Arm, string> = {
  alone: 'alone',
  passive: 'alone, passive',
  default: 'beside busy, default',
  loop: 'beside busy, loop env',
};

/** The trainer's fair share of tok/s beside `busy` CPU-bound processes on `cores` cores. */
export function fairShare(aloneTokPerS: number, cores: number, busy: number): number {
  if (!(Number.isInteger(cores) && Number.isInteger(busy) && busy >= 0 && busy < cores))
    throw new RangeError(`fair share on ${cores} cores beside ${busy} busy processes: no core left`);
  return (aloneTokPerS * (cores - busy)) / cores;
}

/** Per round, the busy arm's tok/s ÷ the fair share from that round's alone tok/s. */
export function shareRatios(
  rounds: readonly { readonly alone: number; readonly busy: number }[],
  cores: number,
  busy: number,
): number[] {
  return rounds.map((r) => r.busy / fairShare(r.alone, cores, busy));
}

/** The arms' order in round `round` (0-based): rotated by one each round. */
export function armOrder<T>(arms: readonly T[], round: number): T[] {
  const k = round % arms.length;
  return [...arms.slice(k), ...arms.slice(0, k)];
}

/** A spin loop in a fresh Node process: exits by itself once its parent is gone (even SIGKILLed). */
const SPIN =
  'const parent = process.ppid; for (let i = 1; ; i++) if (i % 5e7 === 0 && process.ppid !== parent) process.exit(0);';

/** Children to stop however the bench ends. */
const live = new Set<ChildProcess>();
const stopAll = () => {
  for (const child of live) child.kill('SIGKILL');
};

/** A busy process, spinning once this resolves. */
function startBusy(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', SPIN], { stdio: 'ignore' });
  live.add(child);
  child.on('exit', () => live.delete(child));
  return new Promise((resolve, reject) => {
    child.once('spawn', () => resolve(child));
    child.once('error', reject);
  });
}

/** Kills `child` and waits for its exit. */
function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

interface ArmRun {
  readonly tokPerS: number;
  readonly threads: number;
  /** Cores the busy process used over the arm (its CPU seconds ÷ the arm's wall seconds). */
  readonly busyCores?: number | undefined;
}

async function runArm(arm: Arm, model: string, rows: string, o: Options): Promise<ArmRun> {
  const busy = arm === 'alone' || arm === 'passive' ? undefined : await startBusy();
  const start = performance.now();
  try {
    const run = await callPython<SideRun>('sft_bench.py', sideArgs('spa', model, rows, o), {}, armEnv[arm]);
    const used = busy?.pid === undefined ? undefined : procStat(busy.pid)?.cpuSeconds;
    const busyCores = used === undefined ? undefined : used / ((performance.now() - start) / 1000);
    return { tokPerS: run.tokens_per_s, threads: run.torch_threads, busyCores };
  } finally {
    if (busy) await stop(busy);
  }
}

const x = (ratio: number) => `${ratio.toFixed(2)}×`;

async function benchModel(model: string, rows: string, o: Options, cores: number): Promise<void> {
  const runs: Record<Arm, ArmRun>[] = [];
  for (let round = 0; round < o.rounds; round++) {
    const order = armOrder(ARMS, round);
    const got: Partial<Record<Arm, ArmRun>> = {};
    for (const arm of order) got[arm] = await runArm(arm, model, rows, o);
    const r = got as Record<Arm, ArmRun>;
    runs.push(r);
    const fair = fairShare(r.alone.tokPerS, cores, BUSY);
    const busyArm = (arm: Arm) =>
      `${arm} ${r[arm].tokPerS.toFixed(0)} tok/s (${x(r[arm].tokPerS / fair)} fair share` +
      (r[arm].busyCores === undefined ? '' : `; busy process ${r[arm].busyCores!.toFixed(2)} cores`) +
      ')';
    console.log(
      `${model} round ${round + 1}/${o.rounds} (${order.join(', ')}): alone ${r.alone.tokPerS.toFixed(0)} tok/s, ` +
        `passive ${r.passive.tokPerS.toFixed(0)} (${x(r.passive.tokPerS / r.alone.tokPerS)}), ` +
        `fair share ${fair.toFixed(0)}; beside busy: ${busyArm('default')}, ${busyArm('loop')}; ${loadAverage()}`,
    );
  }
  const ratios = (arm: Arm) =>
    shareRatios(
      runs.map((r) => ({ alone: r.alone.tokPerS, busy: r[arm].tokPerS })),
      cores,
      BUSY,
    );
  const loop = ratios('loop');
  const tokPerS = (arm: Arm) => runs.map((r) => r[arm].tokPerS);
  const label = (arm: Arm) => `${armName[arm]} (${envText(armEnv[arm])})`;
  const width = Math.max(label('default').length, label('loop').length);
  const times = (values: readonly number[]) =>
    `${x(median(values))} (${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)})`;
  console.log(
    [
      `${model}: torch threads ${runs[0]!.alone.threads}; tok/s, median (min–max) of ${o.rounds} rounds:`,
      ...ARMS.map((arm) => `  ${armName[arm].padEnd(22)} ${spread(tokPerS(arm), 0)}`),
      `  alone, passive ÷ alone (per round), median (min–max): ${times(runs.map((r) => r.passive.tokPerS / r.alone.tokPerS))}`,
      `  ÷ fair share (alone × ${cores - BUSY}/${cores}, per round), median (min–max):`,
      ...(['default', 'loop'] as const).map(
        (arm) => `    ${label(arm).padEnd(width)}  ${times(ratios(arm))}`,
      ),
      `  goal: loop env ≥ ${GOAL.toFixed(1)}× fair share: ${median(loop) >= GOAL ? 'met' : 'NOT met'}`,
    ].join('\n'),
  );
}

/** The OMP_ variables an arm sets, or "unset". */
function envText(env: NodeJS.ProcessEnv): string {
  const set = Object.entries(env).filter(([k, v]) => k.startsWith('OMP_') && v !== undefined);
  return set.length === 0 ? 'OMP_WAIT_POLICY unset' : set.map(([k, v]) => `${k}=${v}`).join(' ');
}

/** Entry point of the `trainer-share` bench suite. */
export async function run(args: string[]): Promise<void> {
  const o = parseArgs(args, 'trainer-share');
  const cores = cpus().length;
  const [before = 0] = loadavg();
  const rows = o.rows ?? join(await mkdtemp(join(tmpdir(), 'spa-bench-share-')), 'rows.jsonl');
  if (!o.rows) await generateRows(o.steps * o.batchSize, rows);
  console.log(
    [
      `spa_trainer.sft beside a busy process: models ${o.models.join(', ')}; rows ${rows} ` +
        `(spa generate --env sokoban --policy oracle); ${o.steps} steps of ${o.batchSize} rows, window ${o.maxLength}; ` +
        `first ${o.warmupSteps} steps untimed; ${o.rounds} rounds of the four arms, each in a fresh process`,
      `  alone: ${envText(armEnv.alone)}; alone, passive: ${envText(armEnv.passive)}; beside busy, default: ${envText(armEnv.default)}; ` +
        `beside busy, loop env: ${envText(armEnv.loop)} (loop/openmp-env.ts)`,
      `  busy process: ${BUSY} Node spin loop, no CPU affinity; fair share = alone × (${cores} cores − ${BUSY} busy) ÷ ${cores} cores`,
      `  before starting: ${loadAverage()}` +
        (before > cores / 2
          ? ` (note: other work is running; the alone arm assumes an otherwise idle machine)`
          : ''),
      ...(process.env['OMP_WAIT_POLICY'] === undefined
        ? []
        : [
            `  note: OMP_WAIT_POLICY=${process.env['OMP_WAIT_POLICY']} in this shell is not used: each arm sets its own`,
          ]),
    ].join('\n'),
  );
  const onSignal = (signal: NodeJS.Signals) => {
    stopAll();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.on('exit', stopAll);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    for (const model of o.models) await benchModel(model, rows, o, cores);
  } finally {
    stopAll();
    process.off('exit', stopAll);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  console.log(loadAverage());
}
