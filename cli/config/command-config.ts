/**
 * `--config-file <path>` for any commander command: the YAML file's keys are the command's long
 * option names (`group-size: 8`), checked by the same parsers the command line uses, so a file
 * and a flag accept exactly the same values. Precedence: command line > config file > defaults.
 */
import type { Command, Option } from 'commander';
import { ConfigError, loadConfig } from './load-config.js';
import { object, scalar, shown, type Spec } from './schema.js';

const CONFIG_OPTION = 'config-file';

const keyOf = (option: Option): string => (option.long ?? option.flags).replace(/^--/, '');

/** A spec that checks a YAML value with the option's own command-line parser. */
function optionSpec(option: Option): Spec<unknown> {
  if (option.isBoolean()) {
    return scalar((value) => {
      if (typeof value !== 'boolean') throw new Error(`must be true or false, got ${shown(value)}`);
      return option.negate ? !value : value;
    });
  }
  const choices = option.argChoices;
  return scalar((value) => {
    if (value === null || typeof value === 'object')
      throw new Error(`must be a single value (text, a number or true/false), got ${shown(value)}`);
    const textValue = String(value);
    if (choices && !choices.includes(textValue))
      throw new Error(`must be one of ${choices.join(', ')}, got ${shown(value)}`);
    if (!option.parseArg) return textValue;
    try {
      return option.parseArg(textValue, option.defaultValue as unknown);
    } catch (error) {
      // The CLI parsers name the flag ("--groups must be …"); the file names the field instead.
      throw new Error((error as Error).message.replace(new RegExp(`^${option.long ?? ''}\\s*:?\\s*`), ''));
    }
  });
}

/** The schema of a command's config file: one field per long option (except help and the file itself). */
export function configSchemaOf(command: Command): Spec<Record<string, unknown>> {
  const fields = Object.fromEntries(
    command.options
      .filter((o) => o.long !== undefined && o.long !== '--help' && keyOf(o) !== CONFIG_OPTION)
      .map((o) => [keyOf(o), optionSpec(o)]),
  );
  return object(fields);
}

/**
 * The `key: value` the help shows as an example, one the command accepts: its group size (`group-size`
 * of generate, `sft-group-size` of run), 8 as in SPA; a command without one shows its first option.
 */
function exampleEntry(command: Command): string {
  const groupSize = command.options.find((o) => keyOf(o).endsWith('group-size') && o.required);
  if (groupSize) return `${keyOf(groupSize)}: 8`;
  const first = command.options[0];
  if (!first) throw new Error(`withConfigFile: ${command.name()} has no options to read from a file`);
  return `${keyOf(first)}: ${first.isBoolean() ? 'true' : '<value>'}`;
}

/**
 * Adds `--config-file <path>` to `command`. Options required on the command line become
 * required "on the command line or in the file" (checked after the file is merged).
 */
export function withConfigFile(command: Command): Command {
  const mandatory = command.options.filter((o) => o.mandatory);
  for (const option of mandatory) option.mandatory = false; // checked in the hook instead
  command.option(
    `--${CONFIG_OPTION} <path>`,
    `YAML file of option values (keys are the long option names, e.g. ${exampleEntry(command)}); flags given on the command line win`,
  );
  command.hook('preAction', (self) => {
    const file = self.getOptionValue('configFile') as string | undefined;
    if (file !== undefined) {
      let values: Record<string, unknown>;
      try {
        values = loadConfig(file, configSchemaOf(self));
      } catch (error) {
        if (error instanceof ConfigError) self.error(error.message, { code: 'spa.config' });
        throw error;
      }
      for (const option of self.options) {
        const key = keyOf(option);
        const name = option.attributeName();
        if (key in values && self.getOptionValueSource(name) !== 'cli')
          self.setOptionValueWithSource(name, values[key], 'config');
      }
    }
    for (const option of mandatory) {
      if (self.getOptionValue(option.attributeName()) === undefined)
        self.error(
          `error: required option '${option.flags}' not specified (on the command line, or as "${keyOf(option)}:" in --config-file)`,
        );
    }
  });
  return command;
}
