import type { Command } from 'commander';

/** `spa run`: the whole SPA loop at a small default size (the README's main job). */
export function registerRunCommand(program: Command): void {
  program
    .command('run')
    .description('run the SPA loop end to end at a small default size')
    .action(async () => {
      console.log('spa run: the loop is being built; see README "Status".');
    });
}
