/**
 * `spa tap --web`: follows one or more topics with ephemeral consumers (like `spa tap`: a
 * fresh group per topic, deleted on exit, nothing committed) and streams every decoded record
 * to a local page, with per-env success, Pass@k, throughput and consumer lag.
 *
 * Backpressure: each topic read is bounded by {@link readTopic}'s in-flight limit (block);
 * a record is acked as soon as it has been handed to the server, whose per-page policy is
 * drop-and-catch-up (see tap-server.ts), so a slow browser never stalls the consumers.
 */
import { runStage } from './run-stage.js';
import { filter, map, merge, type Subscription } from 'rxjs';
import type { KafkaAdmin } from '../../infra/kafka/client/admin.js';
import { decodeAnySpaRecord } from '../../streams/kafka/consume-spa-decode.js';
import { readTopic, type KafkaConnection, type TopicRead } from '../../streams/kafka/consume-spa.js';
import { matchesTapFilters, type TapFilter } from '../../streams/kafka/tap-filter.js';
import { visibleText } from '../../streams/kafka/tap-text.js';
import { startTapServer } from './tap-server.js';
import { TapStats } from './tap-stats.js';
import { toWebRecord } from './web-record.js';

/** Options of {@link startWebTap}. */
export interface WebTapOptions {
  readonly topics: readonly string[];
  /** `earliest`: the retained history first; `latest`: only new records. */
  readonly start: 'earliest' | 'latest';
  /** 0 picks a free port. */
  readonly port: number;
  readonly filters?: readonly TapFilter[];
  /** How often stats (and lag) are sent to the page. Default 1000 ms. */
  readonly statsIntervalMs?: number;
  /** Fixed token (tests); default random. */
  readonly token?: string;
  /** Where `[tap]` status lines go (the broker connection lost, and where the read resumes). */
  readonly log?: (line: string) => void;
}

/** A running web tap. */
export interface WebTap {
  readonly url: string;
  readonly token: string;
  /** Rejects when a topic read fails (e.g. the broker goes away for good). */
  readonly failed: Promise<never>;
  stop(): Promise<void>;
}

/** Next offset to read per `topic:partition`, seeded from each read's start offsets. */
function positionsOf(reads: readonly TopicRead[]): Map<string, bigint> {
  return new Map(
    reads.flatMap((r) => r.ranges.map((range) => [`${r.topic}:${range.partition}`, range.start])),
  );
}

/**
 * Σ over partitions of (high watermark − offset after the last record read). The tap knows the
 * last record's offset, not the consumer's position, so a partition whose log ends in a
 * transaction marker (every transactional write does) shows 1 too many: an idle, caught-up
 * tap reads at most one per partition, never more.
 */
async function measureLag(admin: KafkaAdmin, topics: readonly string[], positions: Map<string, bigint>) {
  let lag = 0n;
  for (const topic of topics) {
    for (const { partition, high } of await admin.topicOffsets(topic)) {
      const behind = high - (positions.get(`${topic}:${partition}`) ?? 0n);
      if (behind > 0n) lag += behind;
    }
  }
  return Number(lag);
}

/** Starts the server and the topic reads; the URL (with token) is ready when this resolves. */
export async function startWebTap(kafka: KafkaConnection, options: WebTapOptions): Promise<WebTap> {
  if (options.topics.length === 0)
    throw new Error('spa tap --web needs at least one topic, e.g. spa.trajectories');
  const reads = await Promise.all(
    options.topics.map((topic) =>
      readTopic(kafka, {
        topic,
        start: { kind: options.start },
        follow: true,
        purpose: 'spa-tap-web',
        maxInFlight: 64,
        log: (line) => options.log?.(`[tap] ${line}`),
      }),
    ),
  );
  const server = await startTapServer({
    port: options.port,
    title: options.topics.join(', '),
    ...(options.token === undefined ? {} : { token: options.token }),
  });
  const stats = new TapStats();
  const positions = positionsOf(reads);
  let fail: (error: unknown) => void = () => undefined;
  const failed = new Promise<never>((_, reject) => (fail = reject));
  failed.catch(() => undefined); // observed by callers that care; never an unhandled rejection

  const subscription: Subscription = merge(...reads.map((r) => r.records))
    .pipe(
      map(({ record, ack }) => {
        positions.set(`${record.topic}:${record.partition}`, record.offset + 1n);
        ack(); // handing the record to the server is synchronous
        return decodeAnySpaRecord(record);
      }),
      filter((decoded) => matchesTapFilters(decoded, options.filters ?? [])),
    )
    .subscribe({
      next: (decoded) => {
        // Counted from the record, not its card: a trajectory too large to draw still counts.
        stats.recordRead(decoded.ok ? decoded.value.type : 'Undecodable');
        if (decoded.ok && decoded.value.type === 'Trajectory') {
          const { env, group_id: groupId, success } = decoded.value.record;
          // The env and the stage (from the producer's policy and mode) name a row of the page's
          // table: escaped as the cards are.
          stats.episode(visibleText(env), groupId, success, visibleText(runStage(decoded.value.record)));
        }
        server.publish('record', toWebRecord(decoded));
      },
      error: (error: unknown) => fail(error),
    });

  const admin = await kafka.transport.admin();
  let polling = false;
  const timer = setInterval(() => {
    if (polling) return; // a slow poll is skipped, not queued
    polling = true;
    measureLag(admin, options.topics, positions)
      .then((lag) => stats.lag(lag))
      .catch(() => undefined) // a missed lag sample shows as a gap, the tap goes on
      .finally(() => {
        polling = false;
        server.publish('stats', stats.snapshot());
      });
  }, options.statsIntervalMs ?? 1000);

  return {
    url: server.url,
    token: server.token,
    failed,
    async stop() {
      clearInterval(timer);
      subscription.unsubscribe();
      await Promise.all(reads.map((r) => r.closed));
      await admin.close().catch(() => undefined);
      await server.close();
    },
  };
}
