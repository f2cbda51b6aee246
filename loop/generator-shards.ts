import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { OutboundTopic } from '../schemas/outbound.js';
import type { TopicRole } from '../schemas/topics.js';
import type { EpisodeConfig } from '../streams/episodes/episode-config.js';
import { spawnTied } from './lifeline.js';

/** The `spa` entry point the children run (bin/spa.mjs of this checkout). */
const SPA_BIN = fileURLToPath(new URL('../bin/spa.mjs', import.meta.url));

/** What one `spa generate --out kafka` prints as its last stdout line, summed over shards. */
export interface ShardsReport {
  readonly counts: Record<OutboundTopic, number>;
  readonly rejectsByReason: Record<string, number>;
  /** With `--policy latest`: policy version → batches started with it, over all shards. */
  readonly policyVersions: Record<string, number>;
}

/**
 * Runs one generator stage as `shards` child processes, `spa generate <args> --shard i/n` for
 * i = 0 … n−1, against `brokers` (KAFKA_BROKERS), and sums what they report. Child processes,
 * not in-process shards: an ONNX policy runs one generation at a time per process and its
 * session already uses every core it is given, so shards in one process would only queue on it;
 * processes are also what runs on separate machines, and a killed one is restarted alone (its own
 * transactional id fences its zombie, streams/episodes/shard.ts). Progress lines go to stderr as
 * they come (`[generate shard i/n] …`). If one child fails the others are stopped and the stage
 * fails, naming the shard; so does `stop` (the stage failed elsewhere). A restart resumes from what each shard committed. The loop plays every
 * generator stage this way, in one process by default (`generators` 1, shard 0/1): one code path
 * for one generator or n.
 */
export async function generateInShards(
  args: readonly string[],
  shards: number,
  brokers: string,
  stop?: AbortSignal,
): Promise<ShardsReport> {
  const children: ChildProcess[] = [];
  const killAll = () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
  };
  stop?.addEventListener('abort', killAll);
  const runs = Array.from({ length: shards }, (_, index) => {
    const shardArgs = ['generate', ...args, '--shard', `${index}/${shards}`];
    const child = spawnTied(process.execPath, [SPA_BIN, ...shardArgs], {
      env: { KAFKA_BROKERS: brokers },
      stdout: 'pipe',
      stderr: 'inherit',
    });
    children.push(child);
    let stdout = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    return new Promise<ShardsReport>((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code, signal) => {
        if (code === 0) return resolve(JSON.parse(stdout.trim().split('\n').at(-1)!) as ShardsReport);
        reject(
          new Error(
            `generator shard ${index}/${shards} (spa ${shardArgs.join(' ')}) exited with ${signal ?? `code ${code}`}`,
          ),
        );
      });
    });
  });
  try {
    return sumReports(await Promise.all(runs));
  } catch (error) {
    killAll();
    await Promise.allSettled(runs);
    throw error;
  } finally {
    stop?.removeEventListener('abort', killAll);
  }
}

/** `n generator process(es)`, as the log names a stage's generators. */
export function generatorProcesses(n: number): string {
  return `${n} generator process${n === 1 ? '' : 'es'}`;
}

/** The shards' reports added up. */
function sumReports(reports: readonly Partial<ShardsReport>[]): ShardsReport {
  const add = (into: Record<string, number>, from: Readonly<Record<string, number>> = {}) => {
    for (const [key, n] of Object.entries(from)) into[key] = (into[key] ?? 0) + n;
  };
  const total: ShardsReport = {
    counts: { trajectories: 0, sft: 0, rollouts: 0, dlq: 0 },
    rejectsByReason: {},
    policyVersions: {},
  };
  for (const report of reports) {
    add(total.counts, report.counts);
    add(total.rejectsByReason, report.rejectsByReason);
    add(total.policyVersions, report.policyVersions);
  }
  return total;
}

/**
 * The `spa generate` flags that play `episodes` for `target` into the run's `topics` (named
 * `<prefix><role>`), as the loop plays them in its own process; the policy's flags come on top.
 * `--append`: a stage adds to topics an earlier stage of the run filled (the loop checks its own
 * topics: runSpaLoop refuses a new run's used ones and purges an interrupted stage's).
 */
export function generateFlags(
  episodes: EpisodeConfig,
  target: 'sft' | 'rollouts',
  topics: Readonly<Record<TopicRole, string>>,
): string[] {
  const prefix = topics.trajectories.slice(0, -'trajectories'.length);
  if (`${prefix}trajectories` !== topics.trajectories || `${prefix}policy` !== topics.policy)
    throw new Error(`the run's topics share no prefix: ${JSON.stringify(topics)}`);
  return [
    ...['--env', episodes.env, '--variant', episodes.variant, '--target', target, '--split', episodes.split],
    ...['--run-id', episodes.runId, '--seed-base', String(episodes.seedBase)],
    ...['--groups', String(episodes.groups), '--group-size', String(episodes.groupSize)],
    ...['--batches', String(episodes.batches), '--puzzles', episodes.puzzles],
    ...['--out', 'kafka', '--topic-prefix', prefix, '--append'],
  ];
}
