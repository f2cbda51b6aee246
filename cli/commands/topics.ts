import type { Command } from 'commander';
import type { KafkaAdmin } from '../../infra/kafka/client/admin.js';
import { connectSpaKafka, type SpaKafka } from '../../streams/kafka/spa-kafka.js';
import { pickRun, runIdArgument, runTopicPrefix } from '../run-topics.js';
import { COMMAND_SUMMARIES } from './summaries.js';

/** One topic's size. */
interface TopicRow {
  readonly topic: string;
  readonly role: string;
  readonly partitions: number;
  /** Σ (end − start) over partitions; counts transaction markers too. */
  readonly offsets: number;
  /** Per partition: [start, end). */
  readonly ranges: ReadonlyMap<number, { low: number; high: number }>;
}

/** One consumer group's position on one topic. */
interface LagRow {
  readonly group: string;
  readonly state: string;
  readonly members: number;
  readonly topic: string;
  readonly committedPartitions: number;
  readonly partitions: number;
  /** Σ (end − committed) over partitions with a commit; uncommitted partitions count from their start. */
  readonly lag: number;
}

/** The topics listed, by name, with their roles: every topic (SPA's own first), or one run's. */
interface Listing {
  readonly names: readonly string[];
  readonly roles: ReadonlyMap<string, string>;
}

/**
 * Without `run`: every topic but Kafka's own, SPA's default topics first in role order, then the
 * rest (runs, replay targets, tests) by name. With it: that run's topics (cli/run-topics.ts), each
 * with its name under the run's prefix as its role (trajectories, warmup.sft, …).
 */
async function listing(kafka: SpaKafka, admin: KafkaAdmin, run: string | undefined): Promise<Listing> {
  const all = await admin.listTopics();
  if (run !== undefined) {
    const { runId, topics } = pickRun(all, run, 'runs');
    const prefix = runTopicPrefix(runId);
    return { names: topics, roles: new Map(topics.map((t) => [t, t.slice(prefix.length)])) };
  }
  const roles = new Map(Object.entries(kafka.topics).map(([role, name]) => [name, role]));
  const order = [...roles.keys()];
  const rank = (name: string): number => (order.includes(name) ? order.indexOf(name) : order.length);
  const names = all.filter((name) => !name.startsWith('__'));
  return { names: names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b)), roles };
}

async function topicRows(admin: KafkaAdmin, { names, roles }: Listing): Promise<TopicRow[]> {
  return Promise.all(
    names.map(async (topic): Promise<TopicRow> => {
      const offsets = await admin.topicOffsets(topic);
      const ranges = new Map(offsets.map((o) => [o.partition, { low: Number(o.low), high: Number(o.high) }]));
      const total = [...ranges.values()].reduce((sum, r) => sum + (r.high - r.low), 0);
      return { topic, role: roles.get(topic) ?? '', partitions: offsets.length, offsets: total, ranges };
    }),
  );
}

async function lagRows(admin: KafkaAdmin, topics: readonly TopicRow[]): Promise<LagRow[]> {
  const groups = await admin.listGroups();
  const consumerGroups = groups.filter((g) => g.protocolType === 'consumer' || g.protocolType === '');
  if (consumerGroups.length === 0 || topics.length === 0) return [];
  const described = await admin.describeGroups(consumerGroups.map((g) => g.groupId));
  const rows: LagRow[] = [];
  for (const group of described) {
    const committed = await admin.groupOffsets(
      group.groupId,
      topics.map((t) => t.topic),
    );
    for (const { topic, partitions } of committed) {
      const row = topics.find((t) => t.topic === topic);
      const withCommit = partitions.filter((p) => p.offset !== null);
      if (!row || withCommit.length === 0) continue;
      const lag = partitions.reduce((sum, p) => {
        const range = row.ranges.get(p.partition);
        if (!range) return sum;
        const position = p.offset !== null ? Number(p.offset) : range.low;
        return sum + Math.max(0, range.high - position);
      }, 0);
      rows.push({
        group: group.groupId,
        state: group.state,
        members: group.memberCount,
        topic,
        committedPartitions: withCommit.length,
        partitions: row.partitions,
        lag,
      });
    }
  }
  return rows.sort((a, b) => a.group.localeCompare(b.group) || a.topic.localeCompare(b.topic));
}

/** Left-aligned columns separated by two spaces; numbers right-aligned. */
function formatTable(header: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i] ?? '').length)));
  const line = (cells: readonly (string | number)[]): string =>
    cells
      .map((cell, i) =>
        typeof cell === 'number' ? String(cell).padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0),
      )
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** `spa topics`: SPA's topics with partitions and record counts, and consumer groups' lag per topic. */
export function registerTopicsCommand(program: Command): void {
  program
    .command('topics')
    .description(COMMAND_SUMMARIES.topics)
    .option('--json', 'print {topics, groups} as JSON instead of tables', false)
    .option(
      '--run <id>',
      'only the topics of `spa run --run-id <id>` (spa.<id>.*; `last`: the newest run) and their groups',
      runIdArgument,
    )
    .action(async (options: { json: boolean; run?: string }) => {
      const kafka = await connectSpaKafka({ clientId: 'spa-topics', readOnly: true });
      const admin = await kafka.transport.admin();
      try {
        const topics = await topicRows(admin, await listing(kafka, admin, options.run));
        const lags = await lagRows(admin, topics);
        if (options.json) {
          const plain = topics.map(({ ranges: _ranges, ...rest }) => rest);
          console.log(JSON.stringify({ brokers: kafka.config.brokers, topics: plain, groups: lags }));
          return;
        }
        console.log(
          formatTable(
            ['TOPIC', 'ROLE', 'PARTITIONS', 'RECORDS*'],
            topics.map((t) => [t.topic, t.role, t.partitions, t.offsets]),
          ),
        );
        console.log(
          '* end − start offsets summed over partitions (transactional topics: includes commit markers)\n',
        );
        console.log(
          lags.length === 0
            ? 'no consumer group has committed offsets on these topics'
            : `${formatTable(
                ['CONSUMER GROUP', 'STATE', 'MEMBERS', 'TOPIC', 'COMMITTED', 'LAG*'],
                lags.map((l) => [
                  l.group,
                  l.state,
                  l.members,
                  l.topic,
                  `${l.committedPartitions}/${l.partitions}`,
                  l.lag,
                ]),
              )}\n* LAG is end − committed offset: on a transactional topic a group that has read everything ` +
                'still shows 1 per partition, the offset of the last commit marker',
        );
      } finally {
        await admin.close();
        await kafka.close();
      }
    });
}
