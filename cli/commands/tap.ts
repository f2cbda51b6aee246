import { setTimeout as delay } from 'node:timers/promises';
import { InvalidArgumentError, type Command } from 'commander';
import { fromEvent, take } from 'rxjs';
import { connectSpaKafka, type SpaKafka } from '../../streams/kafka/spa-kafka.js';
import { parseTapFilter, type TapFilter } from '../../streams/kafka/tap-filter.js';
import { tapTopic } from '../tap/tap.js';
import { runWebTap } from '../../web/server/run-web-tap.js';
import { MAX_RECORDS, port, positiveInt } from '../options.js';
import {
  brokerTopics,
  newestRun,
  pickRun,
  runIdArgument,
  runIdsIn,
  runTopic,
  topicsOfRun,
  type RunTopics,
} from '../run-topics.js';
import { COMMAND_SUMMARIES } from './summaries.js';

interface TapCliOptions {
  follow: boolean;
  onlyNew: boolean;
  filter: TapFilter[];
  limit?: number;
  json: boolean;
  headers: boolean;
  web: boolean;
  port: number;
  topic: string[];
  run?: string;
  runsDir: string;
}

/**
 * The run whose topics the tap shows: `--run`'s, or for a bare `--web` the newest run on the broker
 * (said on stderr); undefined: no run, the names are taken as given (a bare `--web` shows spa.*).
 */
async function tappedRun(
  kafka: SpaKafka,
  options: TapCliOptions,
  named: readonly string[],
): Promise<RunTopics | undefined> {
  if (options.run !== undefined) return pickRun(await brokerTopics(kafka), options.run, options.runsDir);
  if (!options.web || named.length > 0) return undefined;
  const topics = await brokerTopics(kafka);
  const runId = newestRun(runIdsIn(topics), options.runsDir);
  if (runId === undefined) {
    console.error(
      `[tap] no run's topics (spa.<run>.*) on the broker: showing ${Object.values(kafka.topics).join(', ')}`,
    );
    return undefined;
  }
  console.error(`[tap] showing run ${runId} (the newest; --run <id> picks another)`);
  return { runId, topics: topicsOfRun(topics, runId) };
}

function collectFilter(text: string, previous: TapFilter[]): TapFilter[] {
  try {
    return [...previous, parseTapFilter(text)];
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/**
 * `spa tap <topic>`: prints a topic's records readably (boards, rewards, parse outcomes, reject
 * reasons) with an ephemeral consumer that commits nothing. Default: the retained history from
 * the beginning, stopping at the end offsets seen at start (like `kcat -e`); `--follow` keeps
 * going; `--only-new` skips the history.
 */
export function registerTapCommand(program: Command): void {
  program
    .command('tap')
    .description(COMMAND_SUMMARIES.tap)
    .argument(
      '[topic]',
      'topic name, e.g. spa.trajectories, spa.sft, spa.dlq; with --run also a role: trajectories (required without --web)',
    )
    .option('--follow', 'keep printing new records after the end (Ctrl-C stops)', false)
    .option('--only-new', 'skip the history: only records written after the tap starts', false)
    .option(
      '--filter <key=value>',
      'only records whose top-level field has this value (repeatable, all must match), e.g. env=sokoban, success=true, reason=bad-magic, type=SftRow',
      collectFilter,
      [],
    )
    .option('--limit <n>', 'stop after printing n records', positiveInt('--limit', MAX_RECORDS))
    .option('--json', 'one JSON line per record (bytes as base64) instead of text', false)
    .option('--headers', "also print each record's headers (traceparent, schema, policy version)", false)
    .option(
      '--web',
      'serve a live page on 127.0.0.1 (URL with a token printed at start) instead of printing',
      false,
    )
    .option('--port <n>', 'port of --web (0 = any free port)', port('--port'), 0)
    .option(
      '--topic <name>',
      "with --web: a topic to show (repeatable; default: every topic of the run, without --run the newest run's, else every SPA topic)",
      (t: string, p: string[]) => [...p, t],
      [],
    )
    .option(
      '--run <id>',
      'the topics of `spa run --run-id <id>` (spa.<id>.*; `last`: the newest run); <topic> and --topic may then be roles (trajectories, sft, …)',
      runIdArgument,
    )
    .option('--runs-dir <dir>', "spa run's run folders, to tell which run is the newest", 'runs')
    .action(async (given: string | undefined, options: TapCliOptions, command: Command) => {
      if (!options.web && given === undefined)
        command.error(
          `spa tap needs a <topic> (or --web)${options.run ? `, e.g. npx spa tap trajectories --run ${options.run}` : ''}`,
        );
      const kafka = await connectSpaKafka({ clientId: 'spa-tap' });
      try {
        const named = [...(given === undefined ? [] : [given]), ...options.topic];
        const run = await tappedRun(kafka, options, named);
        const topicOf = (name: string, flag: string) => (run ? runTopic(run, name, flag) : name);
        const topic = given === undefined ? undefined : topicOf(given, '<topic>');
        if (options.web) {
          const shown = [
            ...(topic === undefined ? [] : [topic]),
            ...options.topic.map((t) => topicOf(t, '--topic')),
          ];
          return await runWebTap(kafka, {
            topics: shown.length > 0 ? shown : (run?.topics ?? Object.values(kafka.topics)),
            start: options.onlyNew ? 'latest' : 'earliest',
            port: options.port,
            filters: options.filter,
            print: (line) => console.log(line),
            log: (line) => console.error(line),
          });
        }
        if (topic === undefined) return;
        const summary = await tapTopic(kafka, {
          topic,
          start: options.onlyNew ? 'latest' : 'earliest',
          follow: options.follow,
          filters: options.filter,
          ...(options.limit === undefined ? {} : { limit: options.limit }),
          json: options.json,
          headers: options.headers,
          write: (text) => console.log(options.json ? text : `${text}\n`),
          stop: fromEvent(process, 'SIGINT').pipe(take(1)),
          log: (line) => console.error(line),
        });
        console.error(`[tap] printed ${summary.printed} of ${summary.read} records read from ${topic}`);
      } finally {
        await Promise.race([kafka.close(), delay(300, undefined, { ref: false })]);
        // The tap is closed and has nothing left to flush; a client still retrying a broker that
        // is down (leaving its group: ~25 s) must not hold the process past Ctrl-C.
        setTimeout(() => process.exit(), 100).unref();
      }
    });
}
