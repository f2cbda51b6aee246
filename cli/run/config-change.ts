/**
 * `spa run --allow-config-change <fields>`: what a resume may change of the config its run was
 * started with (loop/recorded-config.ts), and the refusal that names each changed field otherwise.
 */
import { InvalidArgumentError } from 'commander';
import type { LoopConfig } from '../../loop/configs.js';
import type { ConfigChange, ConfigChangedError } from '../../loop/recorded-config.js';
import { loopFieldFlag } from './loop-fields.js';

/** Every field, by the name the refusal gives it (`config` stands for the config's name and env). */
function fieldsByFlag(fields: readonly (keyof LoopConfig)[]): Map<string, (keyof LoopConfig)[]> {
  const byFlag = new Map<string, (keyof LoopConfig)[]>();
  for (const field of fields)
    byFlag.set(loopFieldFlag(field), [...(byFlag.get(loopFieldFlag(field)) ?? []), field]);
  return byFlag;
}

/**
 * The parser of `--allow-config-change`: comma-separated field names as the refusal prints them
 * (`sft-groups,config`), each checked against `fields` (every LoopConfig field).
 */
export function allowedChanges(
  fields: readonly (keyof LoopConfig)[],
): (text: string) => ReadonlySet<keyof LoopConfig> {
  const byFlag = fieldsByFlag(fields);
  return (text) => {
    const names = text.split(',').map((name) => name.trim().replace(/^--/, ''));
    const unknown = names.filter((name) => !byFlag.has(name));
    if (unknown.length > 0)
      throw new InvalidArgumentError(
        `no config field ${unknown.map((n) => `"${n}"`).join(', ')}; name them as spa run's flags, without the dashes (e.g. sft-groups,config)`,
      );
    return new Set(names.flatMap((name) => byFlag.get(name)!));
  };
}

/** A value as a flag takes it back (`frozenlake,sudoku` for a list). */
function shown(value: unknown): string {
  return Array.isArray(value) ? value.join(',') : value === undefined ? '(none)' : String(value);
}

/** A change as the refusal names it: `sft-groups 8 → 16` (`env sokoban → sudoku` under `config`). */
function changeText({ field, was, now }: ConfigChange): string {
  return `${field === 'env' ? 'env' : loopFieldFlag(field)} ${shown(was)} → ${shown(now)}`;
}

/** The refusal's one line: every changed field with both values, and the flag that allows them. */
export function configChangedMessage(error: ConfigChangedError, runId: string): string {
  const flags = [...new Set(error.changes.map((change) => loopFieldFlag(change.field)))];
  return (
    `run "${runId}" was started with another config (${error.configFile}): ` +
    `${error.changes.map(changeText).join(', ')}; resume with the flags it was started with, ` +
    `or pass --allow-config-change ${flags.join(',')} to go on with the new values`
  );
}
