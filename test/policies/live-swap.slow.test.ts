/**
 * `--policy latest`: a generator following spa.policy switches versions while it runs, between
 * batches only (no episode mixes versions), and its admission control makes a batch wait for a
 * newer version instead of running ahead of the trainer (maxStaleness 0 ⇒ one batch per version).
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom, tap, toArray } from 'rxjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { referenceFixture } from '../../bench/python/generate-reference.js';
import { envFactory } from '../../envs/registry.js';
import type { RunningBroker } from '../../infra/kafka/broker.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import { fingerprintHex, spaSchemas, type PolicyUpdate } from '../../schemas/index.js';
import type { StepRecord } from '../../schemas/step-record.js';
import { spaTopicNames, spaTopics } from '../../schemas/topics.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { episodes } from '../../streams/episodes/episodes.js';
import { encodeSpaHeaders } from '../../streams/kafka/headers.js';
import { kafkaTransport, openKafkaAdmin } from '../../infra/kafka/client/kafka-client.js';
import type { KafkaTransport, RecordSink } from '../../infra/kafka/client/transport.js';
import { LatestPolicy } from '../../streams/policies/latest-policy.js';
import { onnxPolicy } from '../../policies/onnx/index.js';
import { startTestBroker, stopTestBroker, testConnection } from '../kafka/harness.js';

const ports = { port: 19480, controllerPort: 19481 };
let broker: RunningBroker;
let dir: string;

beforeAll(async () => {
  const fixture = await referenceFixture();
  broker = await startTestBroker('live-swap', ports);
  // Three "versions" of the policy: the same weights under three manifests.
  dir = await mkdtemp(join(tmpdir(), 'spa-live-swap-'));
  for (const version of [1, 2, 3]) {
    const folder = join(dir, `v${version}`);
    await cp(fixture.artifact, folder, { recursive: true });
    const manifest = JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    await writeFile(join(folder, 'manifest.json'), JSON.stringify({ ...manifest, version }));
  }
});

afterAll(async () => {
  await stopTestBroker('live-swap', ports);
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('--policy latest', () => {
  const prefix = 'swap.';
  const topics = spaTopicNames({ prefix });
  let transport: KafkaTransport;
  let sink: RecordSink;

  beforeAll(async () => {
    const connection = testConnection(broker.brokers);
    await applyTopicsTo(broker.brokers, spaTopics({ prefix }), connection);
    transport = kafkaTransport(connection);
    sink = await transport.sink();
  });

  afterAll(async () => {
    await transport?.close();
  });

  async function publish(version: number): Promise<void> {
    const folder = join(dir, `v${version}`);
    const manifest = JSON.parse(await readFile(join(folder, 'manifest.json'), 'utf8')) as { sha256: string };
    const update: PolicyUpdate = {
      version,
      uri: folder,
      sha256: manifest.sha256,
      stage: version === 1 ? 'sft' : 'ppo',
      step: version - 1,
      model: 'test',
      format: 'onnx',
      created_at: Date.now(),
    };
    await sink.send([
      {
        topic: topics.policy,
        key: Buffer.from('policy'),
        value: spaSchemas().encode('PolicyUpdate', update),
        headers: encodeSpaHeaders({
          policyVersion: version,
          schemaFingerprint: fingerprintHex(spaSchemas().current('PolicyUpdate').fingerprint),
        }),
      },
    ]);
  }

  it('switches versions between batches while running, never inside an episode, and waits for new versions', async () => {
    await publish(1);
    const follower = await LatestPolicy.start({
      transport,
      topic: topics.policy,
      maxStaleness: 0,
      waitTimeoutMs: 120_000,
      log: () => {},
      load: (update) =>
        onnxPolicy({ folder: update.uri, seed: update.version, maxNewTokens: 8, intraOpThreads: 1 }),
    });
    try {
      const config = episodeConfig({
        env: 'sokoban',
        mode: 'base',
        groups: 2,
        groupSize: 2,
        batches: 3,
        maxTurns: 2,
        runId: 'swap',
      });
      const slots = config.groups * config.groupSize;
      let finished = 0;
      const records = await lastValueFrom(
        episodes(config, envFactory({ name: 'sokoban' }), follower.next).pipe(
          tap((record) => {
            if (!record.final) return;
            finished++;
            // The "trainer" publishes the next version once a batch's episodes are all done.
            if (finished % slots === 0 && finished / slots < 3) void publish(finished / slots + 1);
          }),
          toArray(),
        ),
      );
      const byTrajectory = new Map<string, StepRecord[]>();
      for (const r of records)
        byTrajectory.set(r.trajectoryId, [...(byTrajectory.get(r.trajectoryId) ?? []), r]);
      expect(byTrajectory.size).toBe(3 * slots);
      for (const [id, turns] of byTrajectory) {
        expect(new Set(turns.map((t) => t.policyVersion)).size, `${id} mixes versions`).toBe(1);
        const batch = Number(/\/b(\d+)\//.exec(id)![1]);
        expect(turns[0]!.policyVersion).toBe(batch + 1);
      }
      expect(Object.fromEntries(follower.batchesByVersion)).toEqual({ 1: 1, 2: 1, 3: 1 });
    } finally {
      await follower.close();
    }
    // The follower's throwaway consumer group is deleted when it stops.
    const admin = await openKafkaAdmin(testConnection(broker.brokers));
    try {
      const groups = await admin.listGroups();
      expect(groups.filter((g) => g.groupId.startsWith('spa-policy-follower-'))).toEqual([]);
    } finally {
      await admin.close();
    }
  });
});
