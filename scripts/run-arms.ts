/**
 * Runs a check's arms as child processes, side by side: each starts as soon as the file its start
 * model depends on exists (another arm's stage marker) and fewer than `parallel` arms are running.
 * Used by scripts/ppo-check.ts, whose arms are `spa run` processes that alternate between generating
 * and training, so one arm keeps about one core busy.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** One arm: the command that runs it, the JSON file it leaves, and what it must wait for. */
export interface ArmPlan<A extends string> {
  readonly arm: A;
  /** The executable and its arguments. */
  readonly command: readonly string[];
  /** The JSON file the arm writes when it is done (read back into the result). */
  readonly summary: string;
  /** Start only once `marker` exists (written by arm `arm` when this arm's start model is complete). */
  readonly after?: { readonly arm: A; readonly marker: string };
}

export interface RunArmsOptions {
  /** Arms running at once, at most. */
  readonly parallel: number;
  readonly env?: NodeJS.ProcessEnv;
  /** How often waiting arms look for their marker (ms). */
  readonly pollMs?: number;
  /** Where the arms' output goes, each line prefixed with `[arm]`. */
  readonly stdout?: NodeJS.WritableStream;
  readonly stderr?: NodeJS.WritableStream;
}

/**
 * Runs every plan to its end and returns each arm's summary, in the plans' order. Rejects when an
 * arm exits non-zero, or ends without writing the marker another arm waits for; the arms still
 * running are then stopped (each runs as its own process group, so its own children stop too), as
 * they are when this process is interrupted.
 */
export async function runArms<A extends string>(
  plans: readonly ArmPlan<A>[],
  options: RunArmsOptions,
): Promise<Map<A, unknown>> {
  const { parallel, pollMs = 5_000, stdout = process.stdout, stderr = process.stderr } = options;
  if (!(Number.isInteger(parallel) && parallel >= 1))
    throw new RangeError(`--parallel ${parallel}: expected an integer ≥ 1`);
  const pending = [...plans];
  const running = new Map<A, Promise<number | null>>();
  const finished = new Set<A>();
  const groups = new Set<number>();
  const stopAll = () =>
    groups.forEach((pid) => {
      try {
        process.kill(-pid, 'SIGTERM');
      } catch {
        // the group has ended meanwhile
      }
    });
  const onSignal = (signal: NodeJS.Signals) => (stopAll(), process.exit(signal === 'SIGINT' ? 130 : 143));
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  try {
    while (pending.length > 0 || running.size > 0) {
      for (const plan of [...pending]) {
        if (running.size >= parallel) break;
        if (plan.after && !existsSync(plan.after.marker)) {
          if (finished.has(plan.after.arm))
            throw new Error(`arm ${plan.arm}: arm ${plan.after.arm} ended without ${plan.after.marker}`);
          continue;
        }
        pending.splice(pending.indexOf(plan), 1);
        const [executable, ...args] = plan.command;
        stderr.write(`[${plan.arm}] ${args.join(' ')}\n`);
        const child = spawn(executable!, args, {
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
          env: options.env,
        });
        groups.add(child.pid!);
        prefixLines(child.stdout, stdout, plan.arm);
        prefixLines(child.stderr, stderr, plan.arm);
        const exit = new Promise<number | null>((settle) =>
          child.on('close', (code) => (groups.delete(child.pid!), settle(code))),
        );
        running.set(plan.arm, exit);
      }
      const ended = await Promise.race([
        ...[...running].map(([arm, exit]) => exit.then((code) => ({ arm, code }))),
        sleep(pollMs).then(() => undefined),
      ]);
      if (ended === undefined) continue;
      running.delete(ended.arm);
      finished.add(ended.arm);
      if (ended.code !== 0) throw new Error(`arm ${ended.arm} exited with ${ended.code}`);
    }
  } catch (error) {
    stopAll();
    throw error;
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
  }
  return new Map(
    plans.map(({ arm, summary }) => [arm, JSON.parse(readFileSync(summary, 'utf8')) as unknown]),
  );
}

/** Copies `from` to `to`, each line (or carriage-return progress update) prefixed with `[arm]`. */
function prefixLines(from: NodeJS.ReadableStream, to: NodeJS.WritableStream, arm: string): void {
  let rest = '';
  from.setEncoding('utf8');
  from.on('data', (chunk: string) => {
    const parts = (rest + chunk).split(/(?<=[\n\r])/);
    rest = /[\n\r]$/.test(parts.at(-1)!) ? '' : parts.pop()!;
    for (const part of parts) to.write(`[${arm}] ${part}`);
  });
  from.on('end', () => rest && to.write(`[${arm}] ${rest}\n`));
}
