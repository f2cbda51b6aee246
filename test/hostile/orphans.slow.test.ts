/**
 * Issue 42 items 1 and 5 on a real broker: `spa run` killed (SIGKILL, SIGTERM, SIGHUP) while its
 * trainer trains SFT, while its generator and PPO trainer run, and while a generator shard plays
 * the SFT data, leaves no process of the run 5 s later and no record in the run's topics written
 * after it died; SIGTERM and SIGHUP print the resume command and exit 143 and 129. A run killed in
 * PPO and resumed to the end counts every committed rollout and every version played, the killed
 * attempt's too, read back from the rollouts topic.
 */
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningBroker } from '../../infra/kafka/broker.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import { decodeKafkaRecord } from '../../streams/kafka/spa-records.js';
import { runSpa, spawnSpa } from '../cli/spa-process.js';
import { startTestBroker, stopTestBroker, testConnection } from '../kafka/harness.js';
import { readCommitted } from '../kafka/read-records.js';
import { killAll, leftOf, processTree } from './run-processes.js';

const ports = { port: 19540, controllerPort: 19541 };
let broker: RunningBroker;
let runsDir: string;
let config: string;

beforeAll(async () => {
  broker = await startTestBroker('orphans', ports);
  runsDir = await mkdtemp(join(tmpdir(), 'spa-orphans-'));
  config = join(runsDir, 'tiny.yaml');
  // Minutes in all on 2 cores: 8 oracle trajectories, SFT long enough (300 steps, ~20 s) to be
  // killed in, 3 PPO steps of 2 × 2 episodes.
  const fields = [
    'generator: oracle',
    'sft-groups: 8',
    'sft-group-size: 1',
    'sft-batches: 1',
    'sft-epochs: 100',
  ]
    .concat(['ppo-groups-per-step: 2', 'ppo-group-size: 2', 'ppo-steps: 3', 'max-new-tokens: 64'])
    .concat(['eval-puzzles: 1', 'eval-k: 1', 'eval-sft: false']);
  await writeFile(config, fields.join('\n'));
}, 600_000);

afterAll(async () => {
  await stopTestBroker('orphans', ports);
  if (runsDir) await rm(runsDir, { recursive: true, force: true });
});

const kafka = () => {
  const connection = testConnection(broker.brokers);
  return { transport: kafkaTransport(connection), config: connection };
};

const args = (runId: string, extra: readonly string[] = []) => [
  'run',
  ...['--config-file', config, '--runs-dir', runsDir],
  ...extra,
  ...['--run-id', runId],
];

/** The child a kill must catch alive: the trainer, or a generator shard. */
const TRAINER = 'spa_trainer';
const SHARD = '--shard';

/** What a killed `spa run` left: how it ended, what it printed, and its processes alive 5 s later. */
interface Killed {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stderr: string;
  readonly diedAt: number;
  readonly left: string[];
}

/**
 * Starts `spa run` as run `runId` (with `extra` flags) and sends it `signal` once its stderr
 * matches `when`, its process tree noted just before (it must hold a process whose command line
 * contains `child`, or the kill proves nothing); waits for its exit (not for its pipes to close: an orphan holds
 * them) and 5 s more, and SIGKILLs whatever of the run is still alive, so no orphan outlives a test.
 */
async function killDuring(
  runId: string,
  when: RegExp,
  signal: NodeJS.Signals,
  child: string,
  extra: readonly string[] = [],
): Promise<Killed> {
  const spa = spawnSpa(args(runId, extra), broker.brokers).child;
  let stderr = '';
  let snapshot: ReturnType<typeof processTree> = [];
  spa.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (snapshot.length === 0 && when.test(stderr)) {
      snapshot = processTree(spa.pid!);
      spa.kill(signal);
    }
  });
  const [code, gotSignal] = (await once(spa, 'exit')) as [number | null, NodeJS.Signals | null];
  const diedAt = Date.now();
  await delay(5000);
  const left = leftOf(snapshot, runId);
  killAll(left);
  expect(snapshot.length, `${when} never came:\n${stderr.slice(-3000)}`).toBeGreaterThan(1);
  expect(snapshot.map((p) => p.command).join('\n'), 'the child to kill was not running').toContain(child);
  return { code, signal: gotSignal, stderr, diedAt, left: left.map((p) => `${p.pid} ${p.command}`) };
}

/** Records of run `runId`'s topics written after `time` (epoch ms) and committed. */
async function recordsAfter(runId: string, time: number): Promise<string[]> {
  const connection = kafka();
  const admin = await connection.transport.admin();
  const topics = (await admin.listTopics()).filter((t) => t.startsWith(`spa.${runId}.`));
  await admin.close();
  const late: string[] = [];
  for (const topic of topics)
    late.push(
      ...(
        await readCommitted(connection, topic, (r) => (r.timestamp > time ? `${topic}@${r.offset}` : ''))
      ).filter(Boolean),
    );
  await connection.transport.close();
  return late;
}

/** The kill's checks: nothing of the run left 5 s after it died, nothing committed after. */
async function expectNothingLeft(runId: string, killed: Killed): Promise<void> {
  expect(killed.left, killed.stderr.slice(-3000)).toEqual([]);
  expect(await recordsAfter(runId, killed.diedAt)).toEqual([]);
}

/** The resume hint a stopping signal prints. */
const resumeHint = (runId: string, signal: string, extra: readonly string[] = []) =>
  `interrupted by ${signal}; resume with: npx spa run ${args(runId, extra).slice(1).join(' ')}\n`;

const SFT_TRAINING = /── sft\n[\s\S]*\[sft\] epoch 0 step 1\//;
// Step 2's line: step 1's checkpoint and progress are on disk by then, so a resume resumes PPO, and
// the generator has committed two batches' rollouts.
const PPO_STEPPED = /── self-play \+ ppo[\s\S]*\[ppo\] step 2\/3/;
// Step 1's line: the generator shard still has a batch to play, which waits for v2 (staleness 1).
const PPO_FIRST_STEP = /── self-play \+ ppo[\s\S]*\[ppo\] step 1\/3/;

describe('spa run killed, however it ends, leaves no process and no record behind', () => {
  it('SIGKILL during SFT, then SIGTERM during PPO; resumed, its summary counts every attempt', async () => {
    const id = `orphans-a-${process.pid}`;
    const sft = await killDuring(id, SFT_TRAINING, 'SIGKILL', TRAINER);
    expect(sft.signal).toBe('SIGKILL');
    await expectNothingLeft(id, sft);

    const ppo = await killDuring(id, PPO_STEPPED, 'SIGTERM', TRAINER);
    expect(ppo.code, ppo.stderr.slice(-3000)).toBe(143);
    expect(ppo.stderr).toContain(resumeHint(id, 'SIGTERM'));
    await expectNothingLeft(id, ppo);
    const seconds = JSON.parse(await readFile(join(runsDir, id, 'stages', 'seconds.json'), 'utf8')) as {
      seconds: Record<string, number>;
    };
    expect(seconds.seconds['self-play + ppo']).toBeGreaterThan(0);

    const resumed = await runSpa(args(id), broker.brokers);
    expect(resumed.code, resumed.stderr.slice(-3000)).toBe(0);
    expect(resumed.stderr).toMatch(/self-play \+ ppo: resuming after PPO step [12] of 3/);
    const summary = JSON.parse(await readFile(join(runsDir, id, 'summary.json'), 'utf8')) as {
      selfPlay: { rollouts: number };
      generatorVersions: Record<string, number>;
    };
    const rollouts = await readCommitted(kafka(), `spa.${id}.rollouts`, (r) => {
      const decoded = decodeKafkaRecord('Rollout', r);
      if (!decoded.ok) throw new Error(decoded.rejected.detail);
      return { attempt: decoded.record.group_id.split('/')[0]!, version: decoded.record.policy_version };
    });
    // the killed attempt committed rollouts of its own, which the resumed one did not play again
    expect(rollouts.filter((r) => r.attempt === `${id}-rl`).length).toBeGreaterThan(0);
    expect(summary.selfPlay.rollouts).toBe(rollouts.length);
    expect(Object.keys(summary.generatorVersions).sort()).toEqual(
      [...new Set(rollouts.map((r) => String(r.version)))].sort(),
    );
  }, 1_800_000);

  it('SIGTERM during SFT, then SIGKILL during PPO', async () => {
    const id = `orphans-b-${process.pid}`;
    const sft = await killDuring(id, SFT_TRAINING, 'SIGTERM', TRAINER);
    expect(sft.code, sft.stderr.slice(-3000)).toBe(143);
    expect(sft.stderr).toContain(resumeHint(id, 'SIGTERM'));
    await expectNothingLeft(id, sft);

    const ppo = await killDuring(id, PPO_FIRST_STEP, 'SIGKILL', SHARD);
    expect(ppo.signal).toBe('SIGKILL');
    await expectNothingLeft(id, ppo);
  }, 1_800_000);

  it('SIGHUP while a generator shard plays the SFT data: exit 129, the resume command, the shard gone', async () => {
    const id = `orphans-c-${process.pid}`;
    // 400 oracle trajectories (~30 s) for the shard to be killed in
    const playing = /── sft data\n[\s\S]*\[generate\] trajectories 1\//;
    const more = ['--sft-groups', '400'];
    const hup = await killDuring(id, playing, 'SIGHUP', SHARD, more);
    expect(hup.code, hup.stderr.slice(-3000)).toBe(129);
    expect(hup.stderr).toContain(resumeHint(id, 'SIGHUP', more));
    await expectNothingLeft(id, hup);
  }, 600_000);
});
