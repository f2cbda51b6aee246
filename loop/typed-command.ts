/**
 * Commands a hint prints for the user to type. The `spa` bin is on no PATH after `npm install`
 * (only a global install or `npm link` puts it there), while `npx spa` runs this repo's bin as
 * typed from the repo, so every printed command starts with `npx spa`.
 */

/** How a printed command names the CLI. */
const SPA = 'npx spa';

/** `npx spa <args>`, each argument quoted as a POSIX shell reads it back. */
export function typedCommand(args: readonly string[]): string {
  return [SPA, ...args.map(shellWord)].join(' ');
}

/**
 * The command that resumes run `runId`: the same arguments (`argv` after `node bin/spa.mjs`, as
 * `npm start` and `npx spa run` both pass them) with `--run-id <runId>` in place of any given.
 */
export function resumeCommand(argv: readonly string[], runId: string): string {
  const kept = argv.filter(
    (arg, i) => arg !== '--run-id' && !arg.startsWith('--run-id=') && argv[i - 1] !== '--run-id',
  );
  return typedCommand([...kept, '--run-id', runId]);
}

/** A word as a POSIX shell reads it back (quoted only when needed). */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}
