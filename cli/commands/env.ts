import { InvalidArgumentError, type Command } from 'commander';
import { ENV_NAMES } from '../../envs/registry.js';
import { runEnvPlay } from './env-play.js';
import { seedNumber } from '../options.js';
import { loadEnvState, showText, type EnvStateOptions } from './env-show.js';
import { runEnvStep } from './env-step.js';
import { COMMAND_SUMMARIES } from './summaries.js';

const STEP_HELP =
  'replay actions on given states: stdin JSON Lines {"env","render","actions":["Up",…],' +
  '"slippery"?:bool (frozenlake, default true),"seed"?:n (frozenlake slip draws, default 0),' +
  '"puzzle"?:"<initial board>" (sudoku clues, default render)} → {"renders","rewards","done","success",' +
  '"description","dropped"} (+ "valid","effective" for sudoku); unknown action strings are dropped ' +
  'as SPA does; execution stops at done; a bad line gives {"error"} and the stream goes on';

/** Adds the options `show` and `play` share: the env as an argument or as `--env`. */
function withStateOptions(command: Command): Command {
  return command
    .argument('[env]', `environment: ${ENV_NAMES.join(', ')}`)
    .option('--env <name>', 'the environment, as the argument names it (spa env play --env sokoban)')
    .option(
      '--seed <n>',
      'reset seed (SPA trains from 10000, validates from 123)',
      seedNumber('--seed'),
      10000,
    )
    .option('--spa-puzzle', "the paper's own puzzle for this seed (envs/puzzles) instead of our generator's")
    .option('--variant <name>', 'env variant (default: SPA’s; see envs/README.md)');
}

interface StateFlags {
  seed: number;
  spaPuzzle?: boolean;
  variant?: string;
  env?: string;
}

function stateOptions(opts: StateFlags): EnvStateOptions {
  return { seed: opts.seed, spaPuzzle: opts.spaPuzzle === true, variant: opts.variant };
}

/** The env named by the argument or `--env` (one of them; both only when they agree). */
function envNameOf(argument: string | undefined, option: string | undefined): string {
  if (argument !== undefined && option !== undefined && argument !== option)
    throw new InvalidArgumentError(`the env is given twice and differs: "${argument}" and --env "${option}"`);
  const name = argument ?? option;
  if (name === undefined)
    throw new InvalidArgumentError(
      `name the environment: ${ENV_NAMES.join(', ')} (e.g. sokoban or --env sokoban)`,
    );
  return name;
}

/** `read()`, or commander's usage error with its message (exit code 1, no stack trace). */
function checked<T>(command: Command, read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof InvalidArgumentError) command.error(`error: ${error.message}`);
    throw error;
  }
}

/** `spa env …`: poke an environment (step, show, play). */
export function registerEnvCommand(program: Command): void {
  const env = program.command('env').description(COMMAND_SUMMARIES.env);
  env
    .command('step')
    .description(STEP_HELP)
    .action(async () => {
      await runEnvStep(process.stdin, process.stdout);
    });
  withStateOptions(env.command('show'))
    .description('print the render, a blank line, the coordinate description and a solution hint')
    .action((name: string | undefined, opts: StateFlags, command: Command) => {
      const env = checked(command, () => envNameOf(name, opts.env));
      process.stdout.write(showText(loadEnvState(env, stateOptions(opts))));
    });
  withStateOptions(env.command('play'))
    .description('play in the terminal: type Up, "up || left", … (q quits); works with piped input too')
    .action(async (name: string | undefined, opts: StateFlags, command: Command) => {
      const env = checked(command, () => envNameOf(name, opts.env));
      await runEnvPlay(loadEnvState(env, stateOptions(opts)), process.stdin, process.stdout);
    });
}
