/**
 * PPO check (docs/ppo-check.md): does PPO in this system raise the policy's success, beyond what
 * evaluation noise does, and does world-model SFT before PPO help (SPA's ablation) at toy scale?
 *
 *   npm run ppo-check [-- --steps 30 --out runs/ppo-check]
 *
 * Every arm (scripts/check/arms.ts: ppo, control, wm, wm-control) is a real `spa run` (generator with
 * `--policy latest` on onnxruntime-node → spa.<run>.rollouts → PPO service → export → live swap), on
 * Sokoban, evaluated at every `--eval-every`th step on the paper's validation puzzles. Up to
 * `--parallel` arms run side by side, each as soon as its start model exists. Prints the table and
 * writes it with every number to <out>/ppo-check.{md,json}, its curves to <out>/ppo-check.png and,
 * one TensorBoard run per arm by PPO step, to <out>/tensorboard (`npx spa board --runs-dir <out's
 * parent> --run <out's name>` shows them beside the arms' own).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { writeRunReport } from '../loop/run-report.js';
import type { LoopSummary } from '../loop/spa-loop.js';
import { trainerPython } from '../loop/trainer-process.js';
import { armPlans, parseArms, type Arm } from './check/arms.js';
import { checkProgram, type CheckOptions } from './check/options.js';
import { armsTable } from './check/table.js';
import { runArms } from './run-arms.js';

async function main(): Promise<void> {
  const program = checkProgram('ppo-check', { arms: 'wm,wm-control', out: 'runs/ppo-check' });
  program.parse(process.argv.slice(2), { from: 'user' });
  const o = program.opts<CheckOptions>();
  const arms = parseArms(o.arms);
  if (o.evalEvery % o.exportEvery !== 0)
    throw new Error(`--eval-every ${o.evalEvery}: must be a multiple of --export-every ${o.exportEvery}`);
  const started = Date.now();
  // Two arms' torch trainers at two threads each would oversubscribe two cores.
  const env = { ...process.env };
  if (o.parallel > 1) env.OMP_NUM_THREADS ??= '1';
  const plans = armPlans(o, arms, { name: '', warmupSeed: 0 });
  const results = (await runArms(plans, { parallel: o.parallel, env })) as Map<Arm, LoopSummary>;
  const minutes = (Date.now() - started) / 60_000;
  const byArm = new Map([...results].map(([arm, summary]) => [arm, [summary]] as const));
  const text = `${armsTable(o, byArm)}\n\nWall time of the check: ${minutes.toFixed(1)} min.`;
  console.log(text);
  mkdirSync(o.out, { recursive: true }); // each arm's spa run makes its own folder under it
  writeFileSync(join(o.out, 'ppo-check.md'), `${text}\n`);
  const source = join(o.out, 'ppo-check.json');
  writeFileSync(
    source,
    JSON.stringify({ options: o, minutes, arms: Object.fromEntries(results) }, null, 2) + '\n',
  );
  const loggingDir = join(o.out, 'tensorboard');
  const png = await writeRunReport(trainerPython(), { source, loggingDir, reportTo: ['tensorboard'] });
  const out = resolve(o.out);
  if (png)
    console.log(
      `Curves: ${png}; TensorBoard: npx spa board --runs-dir ${dirname(out)} --run ${basename(out)}`,
    );
}

await main();
