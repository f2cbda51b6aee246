// One progress line per provisioning step (npm, venv, jars) with its elapsed time; the tools'
// own output (npm, pip, Maven: hundreds of lines of retries and resolver chatter) goes to one
// log file, whose path and last lines are printed only when a step fails. Plain Node, no
// dependencies: it runs before `npm ci`.
import { spawnSync } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Where every step's tool output goes (`SPA_SETUP_LOG` moves it, e.g. for a test). */
export const setupLog = process.env.SPA_SETUP_LOG ?? join(root, '.setup', 'setup.log');

/** Lines of the log a failure prints. */
const TAIL_LINES = 20;

function seconds(ms) {
  const s = ms / 1000;
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/** Where the log's path is shown from: relative to the checkout when inside it. */
function shown(path) {
  const rel = relative(root, path);
  return rel.startsWith('..') ? path : rel;
}

/** A step's failure: a message for the progress line; the details are in the log. */
class StepFailure extends Error {}

/**
 * Runs `cmd args` with its output appended to the setup log (under a header naming the
 * command); throws StepFailure naming the command and its exit code when it fails.
 */
export function logged(cmd, args, env = {}) {
  mkdirSync(dirname(setupLog), { recursive: true });
  appendFileSync(setupLog, `\n── ${new Date().toISOString()} $ ${[cmd, ...args].join(' ')}\n`);
  const fd = openSync(setupLog, 'a');
  try {
    const r = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', fd, fd], env: { ...process.env, ...env } });
    if (r.error) throw new StepFailure(`cannot run ${cmd}: ${r.error.message}`);
    if (r.status !== 0)
      throw new StepFailure(`${cmd} ${args.slice(0, 3).join(' ')}… exited with ${r.status ?? r.signal}`);
  } finally {
    closeSync(fd);
  }
}

/** The log's last lines, for a failure report. */
function logTail() {
  if (!existsSync(setupLog)) return [];
  return readFileSync(setupLog, 'utf8').trimEnd().split('\n').slice(-TAIL_LINES);
}

/**
 * Runs one step: `work()` returns what it did (e.g. "up to date", "installed"), printed as the
 * step's one line with the time it took. On a terminal the line shows while the step runs and is
 * completed in place. A failure prints the reason, the log's last lines and its path, and exits 1.
 */
export function step(name, work) {
  const started = Date.now();
  const tty = process.stderr.isTTY;
  if (tty) process.stderr.write(`[setup] ${name}…`);
  const done = (text) => process.stderr.write(`${tty ? '\r\x1b[K' : ''}[setup] ${name}: ${text}\n`);
  try {
    const what = work();
    done(`${what} (${seconds(Date.now() - started)})`);
  } catch (error) {
    done(`FAILED after ${seconds(Date.now() - started)}: ${error.message}`);
    const tail = logTail();
    if (tail.length > 0)
      process.stderr.write(`[setup] last lines of ${shown(setupLog)}:\n${tail.join('\n')}\n`);
    process.stderr.write(`[setup] full output: ${setupLog}\n`);
    process.exit(1);
  }
}
