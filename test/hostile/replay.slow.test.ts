/**
 * Hostile input for `spa replay` (issue 33, item 8): a second replay into the same target must not
 * silently double it, and a missing source must not leave a freshly created target behind. Spawns
 * the CLI, as a user runs it, for the messages and exit codes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { envFactory } from '../../envs/registry.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import { spaTopicNames, spaTopics } from '../../schemas/topics.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { generatorPipeline } from '../../streams/generator-pipeline.js';
import type { KafkaConnection } from '../../streams/kafka/consume-spa.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import { publishOutbound } from '../../streams/kafka/publish-outbound.js';
import { builtinPolicy } from '../../policies/builtin.js';
import { runSpa } from '../cli/spa-process.js';
import { startTestBroker, stopTestBroker, testConnection } from '../kafka/harness.js';
import { readAllRecords } from '../kafka/read-records.js';

const ports = { port: 19740, controllerPort: 19741 };
const topics = spaTopicNames({ prefix: 'spa.hostile.' });
let brokers: readonly string[];
let kafka: KafkaConnection;
/** SftRows one replay of the generated trajectories writes. */
let rowsPerReplay: number;

beforeAll(async () => {
  brokers = (await startTestBroker('hostile-replay', ports)).brokers;
  const config = testConnection(brokers);
  await applyTopicsTo(brokers, spaTopics({ prefix: 'spa.hostile.' }));
  kafka = { transport: kafkaTransport(config), config };
  const episodes = episodeConfig({
    env: 'sokoban',
    groups: 3,
    groupSize: 4,
    batches: 1,
    runId: 'hostile-replay',
    mode: 'wm',
  });
  const outputs = generatorPipeline(
    episodes,
    envFactory({ name: 'sokoban', puzzles: 'generated' }),
    builtinPolicy('random', { mode: 'wm', seed: 7 }),
    { target: 'sft' },
  );
  const sink = await kafka.transport.sink({ transactionalId: 'hostile-replay-generator' });
  rowsPerReplay = (await publishOutbound(outputs, sink, { topics, transactionRecords: 16 })).sft;
  await sink.close();
  expect(rowsPerReplay).toBeGreaterThan(0);
}, 240_000);

afterAll(async () => {
  await kafka?.transport.close();
  await stopTestBroker('hostile-replay', ports);
});

const replay = (toTopic: string, ...extra: string[]) =>
  runSpa(
    [
      'replay',
      '--from-topic',
      topics.trajectories,
      '--dlq-topic',
      topics.dlq,
      '--to-topic',
      toTopic,
      ...extra,
    ],
    brokers,
  );

async function topicNames(): Promise<string[]> {
  const admin = await kafka.transport.admin();
  try {
    return await admin.listTopics();
  } finally {
    await admin.close();
  }
}

describe('spa replay into a topic that already holds a replay', () => {
  const target = 'ablation.hostile.gt';

  it('fills an empty target, refuses it again without --append (exit 2, unchanged), doubles it with', async () => {
    // An existing but empty target is fine: nothing is duplicated.
    await applyTopicsTo(
      brokers,
      spaTopics({ names: { sft: target } }).filter((t) => t.role === 'sft'),
    );
    const first = await replay(target);
    expect(first.code, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout.trim())).toMatchObject({ rows: rowsPerReplay, createdTarget: false });
    expect(await readAllRecords(kafka, target, 'SftRow', rowsPerReplay)).toHaveLength(rowsPerReplay);

    const again = await replay(target);
    expect(again.code, again.stderr).toBe(2);
    expect(again.stdout).toBe('');
    expect(again.stderr).toMatch(new RegExp(`^spa: --to-topic "${target}" already holds \\d+ records`));
    expect(again.stderr).toContain('--append');
    expect(again.stderr).not.toContain('    at '); // one line, no stack trace
    expect(await readAllRecords(kafka, target, 'SftRow', rowsPerReplay)).toHaveLength(rowsPerReplay);

    const appended = await replay(target, '--append');
    expect(appended.code, appended.stderr).toBe(0);
    expect(JSON.parse(appended.stdout.trim())).toMatchObject({ rows: rowsPerReplay });
    const rows = await readAllRecords(kafka, target, 'SftRow', 2 * rowsPerReplay);
    expect(rows).toHaveLength(2 * rowsPerReplay); // as asked: every row twice
  });

  it('--help names --append', async () => {
    const help = await runSpa(['replay', '--help'], brokers);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--append');
  });
});

describe('spa replay with a topic that does not exist', () => {
  it('a missing --from-topic: exit 2 naming it, and the --to-topic is not created', async () => {
    const target = 'ablation.hostile.never';
    const result = await runSpa(
      ['replay', '--from-topic', 'spa.hostile.nope', '--dlq-topic', topics.dlq, '--to-topic', target],
      brokers,
    );
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('--from-topic "spa.hostile.nope" does not exist');
    expect(result.stderr).toContain(topics.trajectories); // the topics that do exist
    expect(await topicNames()).not.toContain(target);
  });

  it('a missing --dlq-topic: exit 2 naming it, and the --to-topic is not created', async () => {
    const target = 'ablation.hostile.no-dlq';
    const result = await runSpa(
      [
        'replay',
        '--from-topic',
        topics.trajectories,
        '--dlq-topic',
        'spa.hostile.no-dlq',
        '--to-topic',
        target,
      ],
      brokers,
    );
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain('--dlq-topic "spa.hostile.no-dlq" does not exist');
    expect(await topicNames()).not.toContain(target);
  });
});
