/**
 * Which topics belong to a run, and which run is the newest: what `spa tap`, `spa topics` and
 * `spa replay` need for `--run <id>`; and whether topics hold another run's records, before
 * `spa generate` writes into them. `spa run --run-id X` writes `spa.X.<role>` and its warm-up
 * `spa.X.warmup.<role>` (loop/sft-data.ts, loop/warmup.ts); `spa generate --topic-prefix spa.X.` writes the same.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { lastValueFrom, reduce } from 'rxjs';
import { spaTopicNames, type TopicRole } from '../schemas/topics.js';
import { readTopic } from '../streams/kafka/consume-spa.js';
import type { SpaKafka } from '../streams/kafka/spa-kafka.js';
import { UsageError } from './options.js';

/** `--run last`: the newest run ({@link newestRun}). */
export const LAST_RUN = 'last';

/** The roles in their usual order (spa.trajectories first). */
const ROLES = Object.keys(spaTopicNames()) as TopicRole[];

/** The prefix of run `runId`'s topics: `spa.<runId>.`. */
export function runTopicPrefix(runId: string): string {
  return `spa.${runId}.`;
}

/** Run `runId`'s main topics by role: `spa.<runId>.trajectories`, … */
export function runTopicNames(runId: string): Record<TopicRole, string> {
  return spaTopicNames({ prefix: runTopicPrefix(runId) });
}

/**
 * The topic a `spa replay --run <id>` writes by default: one per annotation (and masking), under the
 * run's prefix, so each ablation of the run gets its own topic and `spa topics --run` lists them.
 */
export function runReplayTopic(runId: string, annotation: string, masked: boolean): string {
  return `${runTopicPrefix(runId)}replay-${annotation}${masked ? '-masked' : ''}.sft`;
}

/**
 * The dead-letter topic of that replay (`spa.<runId>.replay-<annotation>.dlq`): its rejects stay apart
 * from the run's own (spa.<runId>.dlq), whose count the run's summary reports.
 */
export function runReplayDlqTopic(runId: string, annotation: string, masked: boolean): string {
  return runReplayTopic(runId, annotation, masked).replace(/\.sft$/, '.dlq');
}

/**
 * The run ids whose topics are in `topics` (a broker's topic list): `X` for every `spa.X.<role>`.
 * A nested prefix (`spa.X.warmup.sft`) belongs to run `X`, not to a run `X.warmup`; the default
 * topics (`spa.trajectories`, …) belong to no run. Sorted.
 */
export function runIdsIn(topics: readonly string[]): string[] {
  const candidates = new Set<string>();
  for (const topic of topics) {
    if (!topic.startsWith('spa.')) continue;
    const role = ROLES.find((r) => topic.endsWith(`.${r}`));
    const id = role === undefined ? '' : topic.slice('spa.'.length, -(role.length + 1));
    if (id !== '') candidates.add(id);
  }
  const ids = [...candidates];
  return ids.filter((id) => !ids.some((outer) => id.startsWith(`${outer}.`))).sort();
}

/** Run `runId`'s topics among `topics`: its main topics in role order, then the rest (warm-up, replays) by name. */
export function topicsOfRun(topics: readonly string[], runId: string): string[] {
  const prefix = runTopicPrefix(runId);
  const main = Object.values(runTopicNames(runId));
  const rank = (name: string): number => (main.includes(name) ? main.indexOf(name) : main.length);
  return topics
    .filter((name) => name.startsWith(prefix))
    .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/**
 * The newest of `runIds`: of the runs that started their loop (their folder under `runsDir` has
 * `stages/`, made by the first stage: loop/stage-timer.ts), the one whose folder changed last
 * (`spa run` writes there as it goes; a resumed run counts as new). A run that stopped before its
 * first stage (no broker, a usage error after its topics were made) comes after them, as do runs
 * without a folder there (another `--runs-dir`, another machine), newest id first
 * (`run-<yyyymmddhhmmss>` ids sort by time). Undefined when there are none.
 */
export function newestRun(runIds: readonly string[], runsDir: string): string | undefined {
  const changed = (id: string): number =>
    statSync(join(runsDir, id), { throwIfNoEntry: false })?.mtimeMs ?? -1;
  const started = (id: string): number => (existsSync(join(runsDir, id, 'stages')) ? 1 : 0);
  const ranked = runIds.map((id) => ({ id, started: started(id), at: changed(id) }));
  ranked.sort((a, b) => b.started - a.started || b.at - a.at || b.id.localeCompare(a.id));
  return ranked[0]?.id;
}

/** `--run <id>`'s parser: an id that can be part of a topic name (Kafka's [a-zA-Z0-9._-]), or `last`. */
export function runIdArgument(text: string): string {
  if (!/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/.test(text))
    throw new InvalidArgumentError(
      "a run id is 1..200 letters, digits, '.', '_' and '-' (as in spa.<id>.trajectories), or last",
    );
  return text;
}

/** The broker's topic names. */
export async function brokerTopics(kafka: SpaKafka): Promise<string[]> {
  const admin = await kafka.transport.admin();
  try {
    return await admin.listTopics();
  } finally {
    await admin.close();
  }
}

/** A run picked by `--run` (or as the newest), with its topics on the broker. */
export interface RunTopics {
  readonly runId: string;
  /** Every topic of the run the broker holds ({@link topicsOfRun}). */
  readonly topics: readonly string[];
}

/**
 * The run `--run <requested>` names among the broker's `topics` (`last`: the newest); a usage
 * error names the runs there are when the broker holds no topic of it.
 */
export function pickRun(topics: readonly string[], requested: string, runsDir: string): RunTopics {
  const runs = runIdsIn(topics);
  const known = `runs on the broker: ${runs.join(', ') || 'none'}`;
  if (requested === LAST_RUN) {
    const runId = newestRun(runs, runsDir);
    if (runId === undefined) throw new UsageError(`--run last: no run's topics (spa.<run>.*) on the broker`);
    return { runId, topics: topicsOfRun(topics, runId) };
  }
  const found = topicsOfRun(topics, requested);
  if (found.length === 0)
    throw new UsageError(
      `--run ${requested}: no topics ${runTopicPrefix(requested)}* on the broker; ${known}`,
    );
  return { runId: requested, topics: found };
}

/**
 * `name` as a topic of run `runId`: a full name under the run's prefix stays, anything else is read
 * relative to it (`trajectories` → `spa.<runId>.trajectories`); a usage error names the run's
 * topics when it is not one of them.
 */
export function runTopic(run: RunTopics, name: string, flag: string): string {
  const prefix = runTopicPrefix(run.runId);
  const topic = name.startsWith(prefix) ? name : `${prefix}${name}`;
  if (run.topics.includes(topic)) return topic;
  const relative = run.topics.map((t) => t.slice(prefix.length));
  throw new UsageError(
    `${flag} "${name}" is not a topic of run ${run.runId}; its topics: ${relative.join(', ')} (or their full names ${prefix}…)`,
  );
}

/**
 * `--out kafka` without `--append`: `topics` must hold no committed record of another run (a
 * finished `spa run`'s, an earlier `spa generate`'s, whose default --run-id is new each time),
 * which this run's records would join without a word. This run's own records are a resume (the
 * same flags and --run-id), which goes on. Every record's key starts with its run id
 * (`<run-id>/…`); only topics with offsets are read.
 */
export async function refuseOtherRunsTopics(
  kafka: SpaKafka,
  runId: string,
  topics: readonly string[],
): Promise<void> {
  for (const topic of await topicsWithOffsets(kafka, topics)) {
    const others = await otherRunsRecords(kafka, topic, runId);
    if (others.count === 0) continue;
    const runs = [...others.runIds].slice(0, 3).join(', ') + (others.runIds.size > 3 ? ', …' : '');
    throw new UsageError(
      `--out kafka: topic ${topic} already holds ${others.count} records of other runs (${runs}), this one's would be mixed in: ` +
        `give --append to add to them on purpose, a --topic-prefix of its own, or the --run-id of the run to resume`,
    );
  }
}

/** Those of `topics` that hold offsets (records, aborted ones and transaction markers included). */
async function topicsWithOffsets(kafka: SpaKafka, topics: readonly string[]): Promise<string[]> {
  const admin = await kafka.transport.admin();
  try {
    const held: string[] = [];
    for (const topic of topics)
      if ((await admin.topicOffsets(topic)).some((p) => p.high > p.low)) held.push(topic);
    return held;
  } finally {
    await admin.close();
  }
}

/** The committed records of `topic` whose key is not under `runId`, and up to 4 of their run ids. Keys only. */
async function otherRunsRecords(
  kafka: SpaKafka,
  topic: string,
  runId: string,
): Promise<{ count: number; runIds: Set<string> }> {
  const read = await readTopic(kafka, { topic, start: { kind: 'earliest' }, purpose: 'spa-generate-check' });
  const others = await lastValueFrom(
    read.records.pipe(
      reduce(
        (found, { record, ack }) => {
          const key = record.key?.toString('utf8') ?? '';
          if (!key.startsWith(`${runId}/`)) {
            found.count += 1;
            if (found.runIds.size < 4) found.runIds.add(key.split('/')[0] || '(no key)');
          }
          ack();
          return found;
        },
        { count: 0, runIds: new Set<string>() },
      ),
    ),
  );
  await read.closed;
  return others;
}
