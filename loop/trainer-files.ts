import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What the Python trainers leave in their `--out` folder when they exit: the contract between
 * `spa run` and the trainers is these files, not their log lines. Both are strict JSON (a metric
 * without data is `null`) and replaced whole, never written in place.
 */

/** `<sft out>/metrics.json`: the final SFT metrics and the exported policy version, if any. */
export interface SftMetricsFile {
  readonly finished: boolean;
  readonly step: number;
  readonly exported_version?: number | null;
  readonly [metric: string]: unknown;
}

/** `<ppo out>/progress.json`: where the PPO service stands; `version` is its latest published policy. */
export interface PpoProgressFile {
  readonly finished: boolean;
  readonly step: number;
  readonly steps: number;
  readonly version: number;
  readonly [field: string]: unknown;
}

/** Reads a trainer's JSON object file; the error names the file and what was wrong with it. */
export function readTrainerJson(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`${path}: the trainer did not write it (${(error as Error).message})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new Error(`${path}: not valid JSON (${(error as Error).message})`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error(
      `${path}: expected a JSON object, got ${Array.isArray(value) ? 'an array' : String(value)}`,
    );
  return value as Record<string, unknown>;
}

function expectField(file: Record<string, unknown>, path: string, key: string, type: 'number' | 'boolean') {
  if (typeof file[key] !== type)
    throw new Error(`${path}: "${key}" should be a ${type}, got ${JSON.stringify(file[key]) ?? 'nothing'}`);
}

/** The SFT trainer's final metrics (`spa_trainer.sft --out <dir>`); refuses an interrupted run's. */
export function readSftMetrics(outDir: string): SftMetricsFile {
  const path = join(outDir, 'metrics.json');
  const file = readTrainerJson(path);
  expectField(file, path, 'finished', 'boolean');
  expectField(file, path, 'step', 'number');
  if (file['finished'] !== true)
    throw new Error(
      `${path}: SFT stopped at step ${String(file['step'])}, before its last ("finished": false)`,
    );
  return file as SftMetricsFile;
}

/** The PPO service's final position (`spa_trainer.ppo_service --out <dir>`); refuses an unfinished one. */
export function readPpoProgress(outDir: string): PpoProgressFile {
  const path = join(outDir, 'progress.json');
  const file = readTrainerJson(path);
  for (const key of ['step', 'steps', 'version']) expectField(file, path, key, 'number');
  expectField(file, path, 'finished', 'boolean');
  if (file['finished'] !== true)
    throw new Error(
      `${path}: PPO stopped at step ${String(file['step'])} of ${String(file['steps'])} ("finished": false)`,
    );
  return file as PpoProgressFile;
}
