/**
 * `spa env play`: a person plays an environment in the terminal. Reads action lines the way SPA
 * reads an answer (`Up`, `up || left`), so it also works with piped, non-TTY input.
 */
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { pyRepr } from '../../envs/protocol/python-repr.js';
import type { Environment } from '../../envs/types.js';

const QUIT = new Set(['q', 'quit', 'exit']);

/** How an interactive session ended. */
export interface PlayResult {
  readonly done: boolean;
  readonly success: boolean;
  readonly actionsExecuted: number;
}

function promptText(env: Environment): string {
  const names = env.actionNames === null ? '"row,col,value"' : env.actionNames.join(', ');
  return `action (${names}; "a || b" for several; q to quit)> `;
}

/**
 * One line of input → the actions executed and what they printed. Pieces are split on `||` and
 * stripped as SPA's parser does (docs/spa-protocol.md#parser), then mapped through the env's lookup; unknown
 * pieces are reported and skipped. Stops at the first done.
 */
function playLine(env: Environment, line: string, write: (text: string) => void): PlayResult {
  let executed = 0;
  let done = false;
  let success = false;
  for (const piece of line.split('||').map((p) => p.trim())) {
    if (piece === '') continue;
    const action = env.lookupAction(piece);
    if (action === undefined) {
      write(`  ${JSON.stringify(piece)} is not an action (${env.actionNames?.join(', ')}); skipped\n`);
      continue;
    }
    const outcome = env.step(action);
    executed++;
    ({ done, success } = outcome);
    const flags =
      env.actionNames === null
        ? ` valid=${outcome.valid} effective=${outcome.effective}${outcome.valid ? '' : sudokuHint(piece)}`
        : '';
    write(`  ${piece}: reward ${pyRepr(outcome.reward, env.rewardIsFloat)}${flags}\n`);
    if (done) break;
  }
  return { done, success, actionsExecuted: executed };
}

/**
 * For a Sudoku move not written as `row,col,value` (e.g. `(1,3):4`), how to write it; the move
 * itself is still played as SPA plays it (invalid). Empty for a move in that form.
 */
function sudokuHint(piece: string): string {
  if (/^\d+\s*,\s*\d+\s*,\s*\d+$/.test(piece)) return '';
  const numbers = piece.match(/\d+/g);
  const guess = numbers?.length === 3 ? `; did you mean ${numbers.join(',')}?` : '';
  return ` (write row,col,value, e.g. 1,3,4${guess})`;
}

/**
 * The interactive loop: show the state, read a line, step, repeat until done, `q`, or end of input.
 * `output` receives everything, prompts included.
 */
export async function runEnvPlay(env: Environment, input: Readable, output: Writable): Promise<PlayResult> {
  const write = (text: string) => output.write(text);
  const lines = createInterface({ input, output, terminal: false, crlfDelay: Infinity });
  let total = 0;
  write(`${env.state()}\n`);
  lines.setPrompt(promptText(env));
  lines.prompt();
  let result: PlayResult = { done: env.isDone(), success: false, actionsExecuted: 0 };
  // Piped input is not echoed by a terminal; echo it so the transcript reads like a session.
  const echo = (input as { isTTY?: boolean }).isTTY !== true;
  for await (const line of lines) {
    if (echo) write(`${line}\n`);
    if (QUIT.has(line.trim().toLowerCase())) break;
    result = playLine(env, line, write);
    total += result.actionsExecuted;
    write(`${env.state()}\n`);
    if (result.done) {
      write(result.success ? 'Solved!\n' : 'Episode over (not solved).\n');
      break;
    }
    lines.prompt();
  }
  lines.close();
  return { ...result, actionsExecuted: total };
}
