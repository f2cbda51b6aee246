import { Command, CommanderError, Help } from 'commander';
import { COMMAND_SUMMARIES, type CommandName } from './commands/summaries.js';
import { exitWithParent } from '../loop/lifeline.js';
import { typedCommand } from '../loop/typed-command.js';

/** What registers a command on the program: each subcommand lives in cli/commands/<name>.ts. */
type Register = (program: Command) => void;

/**
 * Each command, in the order the help lists them: its term in that list and its module, imported
 * only when the command runs, so `spa --help` or `spa tap …` never loads the Kafka client, the ONNX
 * runtime or OpenTelemetry for `spa run` (the CLI's start-up was 1.6 s of CPU when it loaded all).
 */
const COMMANDS: Record<CommandName, { readonly term: string; readonly load: () => Promise<Register> }> = {
  run: { term: 'run [options]', load: async () => (await import('./commands/run.js')).registerRunCommand },
  env: { term: 'env', load: async () => (await import('./commands/env.js')).registerEnvCommand },
  parse: { term: 'parse', load: async () => (await import('./commands/parse.js')).registerParseCommand },
  generate: {
    term: 'generate [options]',
    load: async () => (await import('./commands/generate.js')).registerGenerateCommand,
  },
  eval: {
    term: 'eval [options]',
    load: async () => (await import('./commands/eval.js')).registerEvalCommand,
  },
  export: {
    term: 'export [options]',
    load: async () => (await import('./commands/export.js')).registerExportCommand,
  },
  replay: {
    term: 'replay [options]',
    load: async () => (await import('./commands/replay.js')).registerReplayCommand,
  },
  tap: {
    term: 'tap [options] [topic]',
    load: async () => (await import('./commands/tap.js')).registerTapCommand,
  },
  topics: {
    term: 'topics [options]',
    load: async () => (await import('./commands/topics.js')).registerTopicsCommand,
  },
  board: {
    term: 'board [options]',
    load: async () => (await import('./commands/board.js')).registerBoardCommand,
  },
  doctor: {
    term: 'doctor [options]',
    load: async () => (await import('./commands/doctor.js')).registerDoctorCommand,
  },
};

/** The command `argv` (node, script, …) runs, also as `spa help <command>`; undefined for none. */
function commandIn(argv: readonly string[]): CommandName | undefined {
  const name = argv[2] === 'help' ? argv[3] : argv[2];
  return name !== undefined && Object.hasOwn(COMMANDS, name) ? (name as CommandName) : undefined;
}

/**
 * Builds the `spa` command tree with the commands `load` names registered in full; the others
 * stand in the top-level help by their term and summary alone (enough for the list and for
 * commander's did-you-mean), since none of them runs. By default every command is loaded.
 */
export async function buildProgram(load: (name: CommandName) => boolean = () => true): Promise<Command> {
  const terms = new Map<Command, string>();
  const program = new Command('spa')
    .description('SPA self-play world-model finetuning as a stream pipeline (RxJS + Kafka + PyTorch)')
    // commander ends a usage error (a flag or config field out of range, a missing option) with
    // code 1; spa's usage errors exit 2 (USAGE_EXIT_CODE of cli/options.ts, not imported here: it
    // loads what every command needs), as those its commands find before any work do.
    .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2))
    .configureHelp({
      subcommandTerm(command) {
        return terms.get(command) ?? Help.prototype.subcommandTerm.call(this, command);
      },
    });
  const loaded = (Object.keys(COMMANDS) as CommandName[]).filter(load);
  for (const name of Object.keys(COMMANDS) as CommandName[]) {
    if (loaded.includes(name)) (await COMMANDS[name].load())(program);
    else {
      const stub = program.command(name).description(COMMAND_SUMMARIES[name]);
      terms.set(stub, COMMANDS[name].term);
    }
  }
  if (loaded.length > 0) (await import('./options.js')).describeRanges(program);
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
    const invoked = commandIn(argv);
    await (await buildProgram((name) => name === invoked)).parseAsync(argv);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    console.error(
      process.env['SPA_DEBUG'] === '1' && error instanceof Error ? error.stack : `spa: ${message}`,
    );
    process.exitCode = error instanceof CommanderError ? error.exitCode : 1;
  }
}
