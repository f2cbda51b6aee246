/**
 * `--model`, checked before a run starts anything: otherwise a missing folder surfaces only when
 * the first trainer loads it, after the broker, the topics and the warm-up data.
 */
import { existsSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { closestKeys } from '../config/schema.js';
import { UsageError } from '../options.js';
import { TINY_MODELS } from '../../loop/configs.js';

/**
 * Throws a {@link UsageError} unless `model` is a tiny model's name or a folder the trainer loads
 * (spa_trainer.models.load.resolve_model_dir): a Hugging Face folder with config.json, a trainer
 * checkpoint (its `model/config.json`) or a trainer run folder (its `checkpoints/latest`).
 */
export function checkModel(model: string): void {
  if (TINY_MODELS.includes(model)) return;
  const expected =
    `expected ${TINY_MODELS.join(' | ')} or a local Hugging Face folder with config.json ` +
    `(a trainer checkpoint or run folder works too)`;
  // A missing name close to a tiny model's (`tiny_local`) is that name mistyped
  // (`spa run` hands over a relative name resolved against the working folder: its last part)
  const close = closestKeys(basename(model), TINY_MODELS);
  if (!existsSync(model) && close.length > 0)
    throw new UsageError(
      `--model ${model}: no such tiny model or folder; did you mean ${close.join(' or ')}?`,
    );
  if (!existsSync(model)) throw new UsageError(`--model ${model}: no such folder; ${expected}`);
  if (!statSync(model).isDirectory()) throw new UsageError(`--model ${model}: not a folder; ${expected}`);
  const loadable = [
    join(model, 'config.json'),
    join(model, 'model', 'config.json'),
    join(model, 'checkpoints', 'latest'),
  ].some((file) => existsSync(file));
  if (!loadable) throw new UsageError(`--model ${model}: no config.json in the folder; ${expected}`);
}
