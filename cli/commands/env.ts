import type { Command } from 'commander';

/** `spa env …`: poke an environment (step, show, play). */
export function registerEnvCommand(program: Command): void {
  program.command('env').description('step, show or play an environment');
}
