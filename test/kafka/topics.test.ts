import { describe, expect, it } from 'vitest';
import {
  brokerInstance,
  randomClusterId,
  scramFormatArgs,
  serverProperties,
} from '../../infra/kafka/broker-config.js';
import { existingBroker } from '../../infra/kafka/broker.js';
import { clusterNodes } from '../../infra/kafka/cluster.js';
import { planTopicChanges } from '../../infra/kafka/topics.js';
import type { ExistingTopic } from '../../infra/kafka/topics.js';
import { clusterReplication, spaTopicNames, spaTopics } from '../../schemas/topics.js';

describe('SPA topic definitions', () => {
  it('names topics from a prefix or per role, and compacts only spa.policy', () => {
    expect(spaTopicNames()).toEqual({
      trajectories: 'spa.trajectories',
      sft: 'spa.sft',
      rollouts: 'spa.rollouts',
      dlq: 'spa.dlq',
      policy: 'spa.policy',
    });
    expect(spaTopicNames({ prefix: 'run7.', names: { dlq: 'dead-letters' } }).dlq).toBe('dead-letters');
    const compacted = spaTopics().filter((t) => t.configs['cleanup.policy'] === 'compact');
    expect(compacted.map((t) => t.name)).toEqual(['spa.policy']);
    expect(() => spaTopics({ names: { sft: 'bad name' } })).toThrow('topic name "bad name" for sft');
    expect(() => spaTopics({ partitions: { sft: 0 } })).toThrow('partitions.sft=0');
  });

  it('plans creates for missing topics, config alignment for drift, and never repartitions', () => {
    const definitions = spaTopics();
    const asDefined = (name: string): ExistingTopic => {
      const t = definitions.find((d) => d.name === name)!;
      return { partitions: t.partitions, configs: { ...t.configs, 'segment.bytes': '1073741824' } };
    };
    const existing = new Map<string, ExistingTopic>([
      ['spa.trajectories', asDefined('spa.trajectories')],
      [
        'spa.sft',
        { ...asDefined('spa.sft'), configs: { ...asDefined('spa.sft').configs, 'retention.ms': '1000' } },
      ],
      ['spa.rollouts', { ...asDefined('spa.rollouts'), partitions: 2 }],
      ['spa.policy', asDefined('spa.policy')],
    ]);
    const plan = planTopicChanges(definitions, existing);
    expect(plan.map((c) => [c.kind, c.topic.name])).toEqual([
      ['alter-configs', 'spa.sft'],
      ['partition-mismatch', 'spa.rollouts'],
      ['create', 'spa.dlq'],
    ]);
    expect(plan[0]).toMatchObject({ differences: [{ name: 'retention.ms', actual: '1000', wanted: '-1' }] });
    const allThere = new Map(definitions.map((d) => [d.name, asDefined(d.name)]));
    expect(planTopicChanges(definitions, allThere)).toEqual([]);
  });
});

describe('SPA topics sized to the cluster', () => {
  it('keeps one copy per broker up to 3, and asks acks=all writes for 2 in-sync copies from 3 on', () => {
    expect([1, 2, 3, 5].map(clusterReplication)).toEqual([
      { replicationFactor: 1, minInsyncReplicas: 1 },
      { replicationFactor: 2, minInsyncReplicas: 1 },
      { replicationFactor: 3, minInsyncReplicas: 2 },
      { replicationFactor: 3, minInsyncReplicas: 2 },
    ]);
    expect(() => clusterReplication(0)).toThrow('a cluster of 0 brokers');
  });

  it('creates RF 3 / min.insync.replicas 2 topics on 3 brokers, RF 1 without the setting on one', () => {
    const onThree = planTopicChanges(spaTopics(), new Map(), 3);
    expect(
      onThree.map((c) => [c.kind, c.topic.replicationFactor, c.topic.configs['min.insync.replicas']]),
    ).toEqual(spaTopics().map(() => ['create', 3, '2']));
    const onOne = planTopicChanges(spaTopics(), new Map(), 1);
    expect(onOne.map((c) => [c.topic.replicationFactor, c.topic.configs['min.insync.replicas']])).toEqual(
      spaTopics().map(() => [1, undefined]),
    );
    // A definition's own factor wins over the cluster's.
    expect(
      planTopicChanges(spaTopics({ replicationFactor: 2 }), new Map(), 3)[0]?.topic.replicationFactor,
    ).toBe(2);
  });

  it('keeps an existing topic as replicated as it is: min.insync.replicas follows its copies, a shortfall is a warning', () => {
    const [sft] = spaTopics().filter((t) => t.role === 'sft');
    const oneCopy = new Map([
      ['spa.sft', { partitions: 6, replicationFactor: 1, configs: { ...sft!.configs } }],
    ]);
    expect(planTopicChanges([sft!], oneCopy, 3)).toEqual([
      { kind: 'replication-mismatch', topic: expect.objectContaining({ replicationFactor: 3 }), actual: 1 },
    ]);
    const threeCopies = new Map([
      ['spa.sft', { partitions: 6, replicationFactor: 3, configs: { ...sft!.configs } }],
    ]);
    // Seen with a broker down (2 alive): still 3 copies, still 2 in sync, nothing to warn about.
    expect(planTopicChanges([sft!], threeCopies, 2)).toEqual([
      {
        kind: 'alter-configs',
        topic: expect.objectContaining({ replicationFactor: 3 }),
        differences: [{ name: 'min.insync.replicas', actual: undefined, wanted: '2' }],
      },
    ]);
  });
});

describe('a read-only look at Kafka (spa topics)', () => {
  it('uses KAFKA_BROKERS, or names what to do when the local broker is not running; starts nothing', async () => {
    const external = await existingBroker({}, { KAFKA_BROKERS: '10.0.0.1:9092, 10.0.0.2:9092' });
    expect(external).toMatchObject({ brokers: ['10.0.0.1:9092', '10.0.0.2:9092'], external: true });
    await expect(existingBroker({ name: 'never-started', port: 29392 }, {})).rejects.toThrow(
      /no broker to look at: KAFKA_BROKERS is not set and the local broker "never-started" is not running \(npm run kafka:start/,
    );
  });
});

describe('local broker layout', () => {
  it('binds every listener to 127.0.0.1 and adds a SCRAM listener only when asked', () => {
    const plain = serverProperties(brokerInstance({ name: 'x', port: 29092, dataRoot: '/tmp/k' }));
    expect(plain).toContain('listeners=PLAINTEXT://127.0.0.1:29092,CONTROLLER://127.0.0.1:29093\n');
    expect(plain).toContain('log.dirs=/tmp/k/x/kraft');
    expect(plain).not.toContain('SASL');
    const sasl = serverProperties(brokerInstance({ name: 'x', port: 29092, saslPort: 29094 }));
    expect(sasl).toContain('SASL_PLAINTEXT://127.0.0.1:29094');
    expect(sasl).toContain('sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512');
  });

  it('rejects clashing ports, odd names and SCRAM values kafka-storage cannot parse', () => {
    expect(() => brokerInstance({ port: 9092, controllerPort: 9092 })).toThrow('ports must differ');
    expect(() => brokerInstance({ name: '../etc' })).toThrow('broker name "../etc"');
    expect(() => brokerInstance({ port: 70000 })).toThrow('port=70000');
    expect(scramFormatArgs([{ username: 'alice', password: 'pw' }])).toEqual([
      '--add-scram',
      'SCRAM-SHA-256=[name=alice,password=pw]',
    ]);
    expect(() => scramFormatArgs([{ username: 'a,b', password: 'pw' }])).toThrow('SCRAM username "a,b"');
  });

  it('lays a local cluster out as one KRaft voter per broker on consecutive port pairs', () => {
    const nodes = clusterNodes({ name: 'c', brokers: 3, port: 29100, dataRoot: '/tmp/k' });
    expect(nodes.map((n) => [n.name, n.nodeId, n.port, n.controllerPort])).toEqual([
      ['node-1', 1, 29100, 29101],
      ['node-2', 2, 29102, 29103],
      ['node-3', 3, 29104, 29105],
    ]);
    const second = serverProperties(brokerInstance(nodes[1]));
    expect(second).toContain('node.id=2\n');
    expect(second).toContain(
      'controller.quorum.voters=1@127.0.0.1:29101,2@127.0.0.1:29103,3@127.0.0.1:29105\n',
    );
    expect(second).toContain('log.dirs=/tmp/k/c/node-2/kraft');
    for (const line of [
      'transaction.state.log.replication.factor=3',
      'transaction.state.log.min.isr=2',
      'offsets.topic.replication.factor=3',
    ])
      expect(second).toContain(`${line}\n`);
    const single = serverProperties(brokerInstance({ name: 'x', port: 29092 }));
    expect(single).toContain('controller.quorum.voters=1@127.0.0.1:29093\n');
    expect(single).toContain('transaction.state.log.replication.factor=1\n');
    expect(single).toContain('transaction.state.log.min.isr=1\n');
    expect(() => clusterNodes({ name: 'c', brokers: 7, dataRoot: '/tmp/k' })).toThrow(
      'a local cluster of 7 brokers',
    );
    expect(() => brokerInstance({ ...nodes[0], controllerPort: 29111 })).toThrow(
      'is not a voter of its quorum',
    );
  });

  it('draws a cluster id again while it starts with "-" (kafka-storage would read it as a flag)', () => {
    const draws = [Buffer.alloc(16, 0xf8), Buffer.alloc(16, 0x01)]; // 0xf8… encodes as "-…"
    expect(draws[0]?.toString('base64url').startsWith('-')).toBe(true);
    const id = randomClusterId(() => draws.shift() as Buffer);
    expect(id).toBe(Buffer.alloc(16, 0x01).toString('base64url'));
    expect(id).toHaveLength(22);
    expect(draws).toHaveLength(0);
  });
});
