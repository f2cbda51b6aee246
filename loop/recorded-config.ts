/**
 * The config a run was started with, kept in `<run>/config.json`: a resume (`spa run --run-id <id>`
 * again) with another config would continue the run's stages with other envs, sizes or models and
 * mix two runs in one summary, so it is refused unless the changed fields are allowed by name.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { LoopConfig } from './configs.js';

/** One field whose value differs from the recorded one. */
export interface ConfigChange {
  readonly field: keyof LoopConfig;
  readonly was: unknown;
  readonly now: unknown;
}

/** A resume whose config differs in fields not allowed to change: `spa run` refuses it (exit 2). */
export class ConfigChangedError extends Error {
  constructor(
    readonly configFile: string,
    readonly changes: readonly ConfigChange[],
  ) {
    super(
      `the run was started with another config (${configFile}): ${changes.map((c) => c.field).join(', ')}`,
    );
    this.name = 'ConfigChangedError';
  }
}

const fileOf = (runDir: string) => join(runDir, 'config.json');

/** The fields of `now` whose values differ from `was`'s (a field either lacks counts as differing). */
function configChanges(was: Readonly<Record<string, unknown>>, now: LoopConfig): ConfigChange[] {
  const fields = new Set([...Object.keys(was), ...Object.keys(now)]) as Set<keyof LoopConfig>;
  return [...fields]
    .filter((field) => JSON.stringify(was[field]) !== JSON.stringify(now[field]))
    .map((field) => ({ field, was: was[field], now: now[field] }));
}

/**
 * Checks `config` against the config the run in `runDir` recorded, if any (the first attempt, or a
 * run from before runs recorded theirs, has none): throws {@link ConfigChangedError} for changes to
 * fields outside `allowed`.
 */
export function checkRecordedConfig(
  runDir: string,
  config: LoopConfig,
  allowed: ReadonlySet<keyof LoopConfig>,
): void {
  const file = fileOf(runDir);
  if (!existsSync(file)) return;
  const changes = configChanges(JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>, config);
  const refused = changes.filter((change) => !allowed.has(change.field));
  if (refused.length > 0) throw new ConfigChangedError(file, refused);
}

/**
 * Records `config` as the run's: once its start has reached the broker (a start that fails leaves
 * no run folder), and after an allowed change, so that the next resume compares with what the run
 * goes on with.
 */
export function recordConfig(runDir: string, config: LoopConfig): void {
  writeFileSync(fileOf(runDir), JSON.stringify(config, null, 2) + '\n');
}
