import { Command, CommanderError } from 'commander';
import { registerDoctorCommand } from './commands/doctor.js';
import { registerEnvCommand } from './commands/env.js';
import { registerEvalCommand } from './commands/eval.js';
import { registerExportCommand } from './commands/export.js';
import { registerGenerateCommand } from './commands/generate.js';
import { registerParseCommand } from './commands/parse.js';
import { registerReplayCommand } from './commands/replay.js';
import { registerRunCommand } from './commands/run.js';
import { registerTapCommand } from './commands/tap.js';
import { registerTopicsCommand } from './commands/topics.js';
import { describeRanges, USAGE_EXIT_CODE } from './options.js';
import { exitWithParent } from '../loop/lifeline.js';
import { typedCommand } from '../loop/typed-command.js';

/** Builds the `spa` command tree; each subcommand lives in cli/commands/<name>.ts. */
export function buildProgram(): Command {
  const program = new Command('spa')
    .description('SPA self-play world-model finetuning as a stream pipeline (RxJS + Kafka + PyTorch)')
    // commander ends a usage error (a flag or config field out of range, a missing option) with
    // code 1; spa's usage errors exit 2, as those its commands find before any work do.
    .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : USAGE_EXIT_CODE));
  registerRunCommand(program);
  registerEnvCommand(program);
  registerParseCommand(program);
  registerGenerateCommand(program);
  registerEvalCommand(program);
  registerExportCommand(program);
  registerReplayCommand(program);
  registerTapCommand(program);
  registerTopicsCommand(program);
  registerDoctorCommand(program);
  describeRanges(program);
  pointAtHelp(program);
  return program;
}

/**
 * Ends each command's usage errors with one line naming its `--help`, in place of the whole help
 * (~110 lines for `spa run`) that would scroll the error and commander's did-you-mean away.
 */
function pointAtHelp(command: Command, path: readonly string[] = []): void {
  const lists = command.commands.length > 0 ? 'commands' : 'options';
  command.showHelpAfterError(`(run '${typedCommand([...path, '--help'])}' for the ${lists})`);
  for (const subcommand of command.commands) pointAtHelp(subcommand, [...path, subcommand.name()]);
}

/**
 * Runs the CLI. A failure prints one `spa: <message>` line (the stack only with SPA_DEBUG=1) and
 * exits with code 1, or a CommanderError's own code (2 for a usage error), so a user sees what
 * was wrong rather than a Node stack trace.
 */
export async function main(argv: string[]): Promise<void> {
  // a child of `spa run` (a generator shard) ends with it, however it ends (loop/lifeline.ts)
  exitWithParent();
  try {
    await buildProgram().parseAsync(argv);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    console.error(
      process.env['SPA_DEBUG'] === '1' && error instanceof Error ? error.stack : `spa: ${message}`,
    );
    process.exitCode = error instanceof CommanderError ? error.exitCode : 1;
  }
}
