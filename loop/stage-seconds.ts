/**
 * Seconds per stage over every attempt of a run. A resumed run keeps the stages an earlier
 * attempt finished (loop/stage-timer.ts), so its summary's `seconds` would otherwise count only
 * what this attempt redid; each attempt adds its own to `<run>/stages/seconds.json`.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** What the run's attempts so far spent: how many there were and their seconds by stage. */
export interface StageSeconds {
  readonly attempts: number;
  readonly seconds: Readonly<Record<string, number>>;
}

const NONE: StageSeconds = { attempts: 0, seconds: {} };

/** `earlier` with one more attempt that spent `attempt` (by stage; stages in first-run order). */
function addAttempt(earlier: StageSeconds, attempt: Readonly<Record<string, number>>): StageSeconds {
  const seconds: Record<string, number> = { ...earlier.seconds };
  for (const [stage, s] of Object.entries(attempt)) seconds[stage] = (seconds[stage] ?? 0) + s;
  return { attempts: earlier.attempts + 1, seconds };
}

const fileOf = (runDir: string) => join(runDir, 'stages', 'seconds.json');

/** The earlier attempts' seconds of the run in `runDir` (none for a new run). */
export function readStageSeconds(runDir: string): StageSeconds {
  const file = fileOf(runDir);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as StageSeconds) : NONE;
}

/**
 * This attempt's seconds by stage on top of the earlier attempts'. `save` is synchronous so that
 * it also runs in an `exit` handler (Ctrl-C), counting the stage under way up to then.
 */
export class AttemptClock {
  private readonly seconds: Record<string, number> = {};
  private readonly running = new Map<string, number>();
  private readonly earlier: StageSeconds;

  constructor(private readonly runDir: string) {
    this.earlier = readStageSeconds(runDir);
  }

  start(stage: string): void {
    this.running.set(stage, Date.now());
  }

  stop(stage: string): void {
    this.seconds[stage] = this.elapsed(stage);
    this.running.delete(stage);
    this.save();
  }

  /** Every attempt's seconds, this one's (its stage under way up to now) included. */
  total(): StageSeconds {
    const now = Object.fromEntries([...this.running.keys()].map((stage) => [stage, this.elapsed(stage)]));
    return addAttempt(this.earlier, { ...this.seconds, ...now });
  }

  /**
   * Records the total for the next attempt; only once a stage has made the run's `stages/`
   * folder, so a start that failed before any stage leaves no folder.
   */
  save(): void {
    if (existsSync(join(this.runDir, 'stages')))
      writeFileSync(fileOf(this.runDir), JSON.stringify(this.total(), null, 2) + '\n');
  }

  private elapsed(stage: string): number {
    const started = this.running.get(stage);
    return (this.seconds[stage] ?? 0) + (started === undefined ? 0 : (Date.now() - started) / 1000);
  }
}
