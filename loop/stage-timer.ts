import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { log } from './log.js';
import type { AttemptClock } from './stage-seconds.js';

/**
 * Stages whose results a resumed run (`spa run --run-id <id>` again) takes from disk instead of
 * redoing them: data stages (their topics hold the data once), trainer stages (their run folders
 * hold the checkpoints) and exports. PPO resumes inside its stage; evaluation is redone.
 */
const RESUMABLE_STAGES: ReadonlySet<string> = new Set([
  'warm-up data',
  'warm-up sft',
  'export v0',
  'export v1',
  'self-play sft data',
  'sft data',
  'sft',
]);

/** Runs one stage; `redo`: an earlier attempt of this run started the stage and did not finish it. */
export type Timed = <T>(stage: string, work: (attempt: { redo: boolean }) => Promise<T>) => Promise<T>;

/**
 * Runs each stage with a log line, its seconds on `clock` and a look at the machine's load first.
 * A resumable stage that finished in an earlier, interrupted attempt of this run is not redone: its
 * outputs are committed (topics, checkpoints, artifacts) and its result is on disk (the run
 * folder's stages/<stage>.json).
 */
export function stageTimer(runDir: string, clock: AttemptClock, checkLoad: () => void): Timed {
  return async (stage, work) => {
    checkLoad();
    const resumable = RESUMABLE_STAGES.has(stage);
    const marker = join(runDir, 'stages', `${stage.replace(/[^\w.-]+/g, '-')}.json`);
    if (resumable && existsSync(marker)) {
      log(`── ${stage}: done in an earlier attempt, kept`);
      return (JSON.parse(readFileSync(marker, 'utf8')) as { result: never }).result;
    }
    const startedMarker = marker.replace(/\.json$/, '.started');
    const redo = resumable && existsSync(startedMarker);
    if (resumable) {
      mkdirSync(dirname(marker), { recursive: true });
      writeFileSync(startedMarker, `${new Date().toISOString()}\n`);
    }
    clock.start(stage);
    log(`── ${stage}${redo ? ' (again: an earlier attempt was cut off)' : ''}`);
    try {
      const result = await work({ redo });
      if (resumable) writeFileSync(marker, JSON.stringify({ result }, null, 2) + '\n');
      return result;
    } finally {
      clock.stop(stage);
    }
  };
}
