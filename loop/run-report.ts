/**
 * What a finished run (or a ppo-check) leaves for the eye, from the JSON it wrote: its evaluations
 * as TensorBoard scalars beside the trainers' curves (`python -m spa_trainer.eval_board`, the run's
 * `eval` TensorBoard run) and its picture (`python -m spa_trainer.plots`: Pass@1 ± SE by policy
 * version beside the random floor, and the stage timeline). Both are Python: npm has no maintained
 * tfevents writer, and the trainer venv has torch's SummaryWriter and matplotlib.
 */
import { existsSync } from 'node:fs';
import { log } from './log.js';
import { runTrainerModule } from './trainer-process.js';

/** Where a run's report goes and what it comes from. */
export interface RunReport {
  /** The run's summary.json, or a ppo-check's ppo-check.json. */
  readonly source: string;
  /** The TensorBoard run folder of the evaluations (a check's: one per arm under it). */
  readonly loggingDir: string;
  /** `--report-to` of the run: `none` writes the picture only. */
  readonly reportTo: readonly string[];
}

/**
 * Writes the run's evaluation scalars and its PNG (`<source>.png`); the PNG's path, or undefined.
 * A failure only warns (`warn`): the run has finished and its summary stands.
 */
export async function writeRunReport(
  python: string,
  report: RunReport,
  warn: (line: string) => void = log,
): Promise<string | undefined> {
  const png = report.source.replace(/\.json$/, '.png');
  const steps: [string, string[]][] = [
    ['spa_trainer.plots', [report.source, '--out', png]],
    ...(report.reportTo.includes('none')
      ? []
      : [
          [
            'spa_trainer.eval_board',
            [report.source, '--logging-dir', report.loggingDir, '--report-to', ...report.reportTo],
          ] as [string, string[]],
        ]),
  ];
  for (const [module, args] of steps) {
    try {
      await runTrainerModule(python, module, args, { label: 'report' }).done;
    } catch (error) {
      warn(`warning: ${(error as Error).message}; the run itself is complete`);
    }
  }
  return existsSync(png) ? png : undefined;
}
