import type { Command } from 'commander';
import { ENV_NAMES } from '../../envs/registry.js';
import { runEnvPlay } from './env-play.js';
import { loadEnvState, parseSeed, showText, type EnvStateOptions } from './env-show.js';
import { runEnvStep } from './env-step.js';

const STEP_HELP =
  'replay actions on given states: stdin JSON Lines {"env","render","actions":["Up",…],' +
  '"slippery"?:bool (frozenlake, default true),"seed"?:n (frozenlake slip draws, default 0),' +
  '"puzzle"?:"<initial board>" (sudoku clues, default render)} → {"renders","rewards","done","success",' +
  '"description","dropped"} (+ "valid","effective" for sudoku); unknown action strings are dropped ' +
  'as SPA does; execution stops at done; a bad line gives {"error"} and the stream goes on';

/** Adds the options `show` and `play` share. */
function withStateOptions(command: Command): Command {
  return command
    .argument('<env>', `environment: ${ENV_NAMES.join(', ')}`)
    .option('--seed <n>', 'reset seed (SPA trains from 10000, validates from 123)', parseSeed, 10000)
    .option('--spa-puzzle', "the paper's own puzzle for this seed (envs/puzzles) instead of our generator's")
    .option('--variant <name>', 'env variant (default: SPA’s; see envs/README.md)');
}

function stateOptions(opts: { seed: number; spaPuzzle?: boolean; variant?: string }): EnvStateOptions {
  return { seed: opts.seed, spaPuzzle: opts.spaPuzzle === true, variant: opts.variant };
}

/** `spa env …`: poke an environment (step, show, play). */
export function registerEnvCommand(program: Command): void {
  const env = program.command('env').description('step, show or play an environment');
  env
    .command('step')
    .description(STEP_HELP)
    .action(async () => {
      await runEnvStep(process.stdin, process.stdout);
    });
  withStateOptions(env.command('show'))
    .description('print the render, a blank line, the coordinate description and a solution hint')
    .action((name: string, opts: { seed: number; spaPuzzle?: boolean; variant?: string }) => {
      process.stdout.write(showText(loadEnvState(name, stateOptions(opts))));
    });
  withStateOptions(env.command('play'))
    .description('play in the terminal: type Up, "up || left", … (q quits); works with piped input too')
    .action(async (name: string, opts: { seed: number; spaPuzzle?: boolean; variant?: string }) => {
      await runEnvPlay(loadEnvState(name, stateOptions(opts)), process.stdin, process.stdout);
    });
}
