import { setTimeout as delay } from 'node:timers/promises';
import { InvalidArgumentError, type Command } from 'commander';
import { fromEvent, take } from 'rxjs';
import { connectSpaKafka } from '../../streams/kafka/spa-kafka.js';
import { parseTapFilter, tapTopic, type TapFilter } from '../../streams/kafka/tap.js';
import { runWebTap } from '../../streams/web/run-web-tap.js';
import { MAX_RECORDS, port, positiveInt } from '../options.js';

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
    .description('print records of a topic readably (ephemeral consumer, commits nothing)')
    .argument('[topic]', 'topic name, e.g. spa.trajectories, spa.sft, spa.dlq (required without --web)')
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
      'with --web: a topic to show (repeatable; default: every SPA topic)',
      (t: string, p: string[]) => [...p, t],
      [],
    )
    .action(async (topic: string | undefined, options: TapCliOptions, command: Command) => {
      if (!options.web && topic === undefined) command.error('spa tap needs a <topic> (or --web)');
      const kafka = await connectSpaKafka({ clientId: 'spa-tap' });
      try {
        if (options.web) {
          const named = [...(topic === undefined ? [] : [topic]), ...options.topic];
          return await runWebTap(kafka, {
            topics: named.length > 0 ? named : Object.values(kafka.topics),
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
        // is down (kafkajs leaving its group: ~25 s) must not hold the process past Ctrl-C.
        setTimeout(() => process.exit(), 100).unref();
      }
    });
}
