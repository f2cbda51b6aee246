/**
 * The checks' tables: Pass@1 ± standard error at each evaluated PPO step, the change from start to
 * end and the end's lead over the arm's own control's end (paired by puzzle, docs/spa-eval.md#paired),
 * Pass@k and minutes; pooled over starts for spa-check (docs/spa-check.md#statistics).
 */
import type { LoopSummary } from '../../loop/spa-loop.js';
import type { EvaluationResult } from '../../streams/eval/evaluate.js';
import { pooledPairedDifference, pooledPass1 } from '../../streams/eval/pass-at-k.js';
import { CONTROL_OF, type Arm } from './arms.js';
import type { CheckOptions } from './options.js';

export const pct = (x: number, se: number) => `${(100 * x).toFixed(1)} ± ${(100 * se).toFixed(1)}`;
const signedPct = (x: number, se: number) => `${x >= 0 ? '+' : '−'}${pct(Math.abs(x), se)}`;

/** A learning curve: the evaluated policies of a run, in order, without the random floor. */
const curveOf = (summary: LoopSummary): EvaluationResult[] =>
  summary.evaluations.filter((e) => e.policy !== 'random');

/**
 * The policy evaluated after PPO step `step` (version step + 1: v1 is the start), so an arm that ran
 * longer than the check (an earlier, longer attempt of it) is read at the check's steps.
 */
export function evaluationAt(summary: LoopSummary, step: number): EvaluationResult {
  const found = curveOf(summary).find((e) => e.policyVersion === step + 1);
  if (!found) throw new Error(`no evaluation of policy v${step + 1} (PPO step ${step}) in ${summary.runDir}`);
  return found;
}

/** The PPO steps at which the curve was evaluated. */
function evaluatedSteps(o: CheckOptions): number[] {
  const steps = Array.from({ length: Math.floor(o.steps / o.evalEvery) + 1 }, (_, i) => i * o.evalEvery);
  if (o.steps % o.evalEvery !== 0) steps.push(o.steps);
  return steps;
}

const minutesOf = (summary: LoopSummary): number =>
  Object.values(summary.seconds).reduce((a, s) => a + s, 0) / 60;

/** The paired difference `after − before`, pooled over the starts' pairs, as `+x ± y`. */
export function pooledDifference(pairs: readonly (readonly [EvaluationResult, EvaluationResult])[]): string {
  const d = pooledPairedDifference(pairs);
  return signedPct(d.mean, d.stdErr);
}

/**
 * One row per arm, each arm's results over the starts (one start: ppo-check): Pass@1 at each step
 * (pooled), end − start and end − control's end (paired, pooled), Pass@k start → end, minutes.
 */
export function armsTable(o: CheckOptions, results: ReadonlyMap<Arm, readonly LoopSummary[]>): string {
  const steps = evaluatedSteps(o);
  const lines = [
    `| arm | ${steps.map((s) => `step ${s}`).join(' | ')} | end − start | end − control's end | Pass@${o.evalK} start → end | minutes |`,
    `| --- | ${steps.map(() => '---').join(' | ')} | --- | --- | --- | --- |`,
  ];
  for (const [arm, summaries] of results) {
    const points = steps.map((step) => pooledPass1(summaries.map((s) => evaluationAt(s, step))));
    const startEnd = summaries.map((s) => [evaluationAt(s, 0), evaluationAt(s, o.steps)] as const);
    const controls = CONTROL_OF[arm] && results.get(CONTROL_OF[arm]);
    const overControl = controls
      ? pooledDifference(controls.map((c, i) => [evaluationAt(c, o.steps), startEnd[i]![1]] as const))
      : '–';
    const passK = (i: 0 | 1) => (100 * startEnd.reduce((a, pair) => a + pair[i].passK, 0)) / startEnd.length;
    const minutes = summaries.reduce((a, s) => a + minutesOf(s), 0) / summaries.length;
    lines.push(
      `| ${arm} | ${points.map((p) => pct(p.mean, p.stdErr)).join(' | ')} | ${pooledDifference(startEnd)} | ${overControl} | ${passK(0).toFixed(1)} → ${passK(1).toFixed(1)} | ${minutes.toFixed(1)} |`,
    );
  }
  const floors = [...results.values()]
    .flat()
    .flatMap((s) => s.evaluations.filter((e) => e.policy === 'random'));
  if (floors[0])
    lines.push('', `Random policy (the floor): Pass@1 ${pct(floors[0].pass1, floors[0].pass1StdErr)}.`);
  return lines.join('\n');
}
