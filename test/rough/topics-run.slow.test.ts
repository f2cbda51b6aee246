/**
 * Issue 36, items 2 and 6, as a user meets them after `npm start`: a run writes `spa.<run>.*`, so
 * `spa topics --run`, `spa tap --run` (and a bare `spa tap --web`, which opens on the newest run)
 * and `spa replay --run` pick that run's topics; `spa generate --out kafka` into a finished run's
 * topics stops and asks for `--append`, while resuming the same --run-id still works. Spawns the
 * CLI as a user runs it; one broker for the file.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTopicNames } from '../../cli/run-topics.js';
import type { KafkaConnection } from '../../streams/kafka/consume-spa.js';
import { kafkaTransport } from '../../infra/kafka/client/kafka-client.js';
import { runSpa, spawnSpa } from '../cli/spa-process.js';
import { startTestBroker, stopTestBroker, testConnection } from '../kafka/harness.js';
import { readAllRecords } from '../kafka/read-records.js';
import { readEvents, signIn } from '../web/tap-http.js';

const ports = { port: 19760, controllerPort: 19761 };
/** Two finished runs: `rough-a` ran last (its folder changed last), `rough-b` sorts later by id. */
const runs = { a: 'rough-a', b: 'rough-b' } as const;
/** The generator run id a `spa run` gives its SFT data stage, `<run>-sft` (loop/sft-data.ts). */
const sftRunId = (run: string): string => `${run}-sft`;
/** Trajectories each run's data stage commits: 2 groups of 2, one batch. */
const perRun = 4;
let brokers: readonly string[];
let kafka: KafkaConnection;
let runsDir: string;
/** SFT rows each run's data stage committed to its `spa.<run>.sft`. */
const sftRows: Record<string, number> = {};

/** `spa generate` of the SFT data stage of `run` into its topics, plus `extra` flags. */
const generate = (run: string, ...extra: string[]) =>
  runSpa(
    [
      'generate',
      ...['--env', 'sokoban', '--policy', 'random', '--groups', '2', '--group-size', '2', '--batches', '1'],
      ...['--out', 'kafka', '--topic-prefix', `spa.${run}.`, ...extra],
    ],
    brokers,
  );

/** The last stdout line of a `spa generate --out kafka`: its counts and what was committed before. */
function report(stdout: string): { counts: { trajectories: number; sft: number }; resumed: number } {
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as ReturnType<typeof report>;
}

beforeAll(async () => {
  brokers = (await startTestBroker('rough-topics', ports)).brokers;
  const config = testConnection(brokers);
  kafka = { transport: kafkaTransport(config), config };
  for (const run of [runs.a, runs.b]) {
    const made = await generate(run, '--run-id', sftRunId(run));
    expect(made.code, made.stderr).toBe(0);
    expect(report(made.stdout).counts.trajectories).toBe(perRun);
    sftRows[run] = report(made.stdout).counts.sft;
  }
  runsDir = mkdtempSync(join(tmpdir(), 'spa-rough-runs-'));
  for (const [run, secondsAgo] of [
    [runs.a, 10],
    [runs.b, 3600],
  ] as const) {
    mkdirSync(join(runsDir, run));
    const at = new Date(Date.now() - secondsAgo * 1000);
    utimesSync(join(runsDir, run), at, at);
  }
}, 300_000);

afterAll(async () => {
  if (runsDir) rmSync(runsDir, { recursive: true });
  await kafka?.transport.close();
  await stopTestBroker('rough-topics', ports);
});

describe('spa topics --run', () => {
  it("lists that run's topics only, with their roles and record counts", async () => {
    const result = await runSpa(['topics', '--run', runs.a, '--json'], brokers);
    expect(result.code, result.stderr).toBe(0);
    const { topics } = JSON.parse(result.stdout) as {
      topics: { topic: string; role: string; offsets: number }[];
    };
    expect(topics.map((t) => t.topic)).toEqual(Object.values(runTopicNames(runs.a)));
    expect(topics.map((t) => t.role)).toEqual(['trajectories', 'sft', 'rollouts', 'dlq', 'policy']);
    expect(topics[0]!.offsets).toBeGreaterThanOrEqual(perRun);
  });

  it('an unknown run: exit 2 naming the runs there are', async () => {
    const result = await runSpa(['topics', '--run', 'rough-nope'], brokers);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      `spa: --run rough-nope: no topics spa.rough-nope.* on the broker; runs on the broker: ${runs.a}, ${runs.b}`,
    );
  });
});

describe('spa tap --run', () => {
  it('prints a topic of the run named by its role', async () => {
    const result = await runSpa(['tap', 'trajectories', '--run', runs.b, '--json', '--limit', '1'], brokers);
    expect(result.code, result.stderr).toBe(0);
    const record = JSON.parse(result.stdout.trim()) as { topic: string; key: string };
    expect(record.topic).toBe(runTopicNames(runs.b).trajectories);
    expect(record.key.startsWith(`${sftRunId(runs.b)}/`)).toBe(true);
  });

  it("--web without topics opens on the newest run and says so; the page gets that run's records", async () => {
    const tap = spawnSpa(['tap', '--web', '--port', '0', '--runs-dir', runsDir], brokers);
    let stdout = '';
    tap.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    try {
      await expect
        .poll(() => /open (http:\S+)/.exec(stdout)?.[1], { timeout: 60_000, interval: 200 })
        .toBeDefined();
      const url = /open (http:\S+)/.exec(stdout)![1]!;
      const cookie = await signIn(url);
      const [first] = await readEvents(
        new URL('/events', url).href,
        1,
        { cookie },
        (e) => e.event === 'record',
      );
      expect((first!.data as { source: { topic: string } }).source.topic.startsWith(`spa.${runs.a}.`)).toBe(
        true,
      );
    } finally {
      tap.child.kill('SIGINT');
    }
    const { code, stderr } = await tap.ended;
    expect(code, stderr).toBe(0);
    expect(stderr).toContain(`[tap] showing run ${runs.a} (the newest; --run <id> picks another)`);
    expect(stderr).toContain(`[tap] serving ${Object.values(runTopicNames(runs.a)).join(', ')} on 127.0.0.1`);
  });

  it("a topic that is not the run's: exit 2 listing the run's topics", async () => {
    const result = await runSpa(['tap', 'spa.trajectories', '--run', runs.a], brokers);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `"spa.trajectories" is not a topic of run ${runs.a}; its topics: trajectories, sft, rollouts, dlq, policy`,
    );
  });
});

describe('spa replay --run', () => {
  it("replays the run's trajectories into a topic of the run (explicit flags win)", async () => {
    const result = await runSpa(['replay', '--run', runs.b], brokers);
    expect(result.code, result.stderr).toBe(0);
    const summary = JSON.parse(result.stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(summary).toMatchObject({
      from: runTopicNames(runs.b).trajectories,
      to: `spa.${runs.b}.replay-gt.sft`,
      // issue 44: the replay's rejects go to a dead-letter topic of its own, not the run's
      dlq: `spa.${runs.b}.replay-gt.dlq`,
      read: perRun,
    });
    const admin = await kafka.transport.admin();
    try {
      expect(await admin.listTopics()).toContain(`spa.${runs.b}.replay-gt.dlq`);
    } finally {
      await admin.close();
    }
    const named = await runSpa(['replay', '--run', runs.b, '--to-topic', 'rough.replayed'], brokers);
    expect(named.code, named.stderr).toBe(0);
    expect(JSON.parse(named.stdout.trim().split('\n').at(-1)!)).toMatchObject({ to: 'rough.replayed' });
  });
});

describe('spa export --run', () => {
  // issue 44: export read only a JSONL file; a run's SFT topic needed `spa tap --json | jq`
  it("exports the run's SFT topic, says what it wrote, and each half's rows say their split", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spa-export-run-'));
    try {
      const [out, val] = [join(dir, 'wm_train.jsonl'), join(dir, 'wm_val.jsonl')];
      const result = await runSpa(['export', '--run', runs.a, '--out', out, '--split-val', '0.25'], brokers);
      expect(result.code, result.stderr).toBe(0);
      const summary = JSON.parse(result.stdout.trim().split('\n').at(-1)!) as {
        rows: number;
        val: { rows: number };
      };
      expect(sftRows[runs.a]).toBeGreaterThan(1);
      expect(summary.rows + summary.val.rows).toBe(sftRows[runs.a]);
      expect(result.stderr).toContain(`[export] read ${sftRows[runs.a]} SftRows from spa.${runs.a}.sft`);
      expect(result.stderr).toContain(
        `[export] wrote ${out} (${summary.rows} rows, split train) and ${val} (${summary.val.rows} row`,
      );
      const splits = (path: string) =>
        readFileSync(path, 'utf8')
          .trim()
          .split('\n')
          .map(
            (line) => /'split': '(\w+)'/.exec((JSON.parse(line) as { extra_info: string }).extra_info)?.[1],
          );
      expect(new Set(splits(out))).toEqual(new Set(['train']));
      expect(new Set(splits(val))).toEqual(new Set(['val']));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("spa generate into a finished run's topics", () => {
  const topics = runTopicNames(runs.a);

  it('stops (exit 2) naming the topic, its count and --append; writes nothing', async () => {
    const result = await generate(runs.a);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim()).toBe(
      `spa: --out kafka: topic ${topics.trajectories} already holds ${perRun} records of other runs (${sftRunId(runs.a)}), ` +
        "this one's would be mixed in: give --append to add to them on purpose, a --topic-prefix of its own, or the --run-id of the run to resume",
    );
    expect(await readAllRecords(kafka, topics.trajectories, 'Trajectory', perRun)).toHaveLength(perRun);
  });

  it('resuming the same --run-id goes on (nothing left to play)', async () => {
    const result = await generate(runs.a, '--run-id', sftRunId(runs.a));
    expect(result.code, result.stderr).toBe(0);
    expect(report(result.stdout)).toMatchObject({ resumed: perRun, counts: { trajectories: 0 } });
  });

  it('--append adds to them on purpose', async () => {
    const result = await generate(runs.a, '--run-id', 'rough-extra', '--append');
    expect(result.code, result.stderr).toBe(0);
    expect(report(result.stdout)).toMatchObject({ resumed: 0, counts: { trajectories: perRun } });
    expect(await readAllRecords(kafka, topics.trajectories, 'Trajectory', 2 * perRun)).toHaveLength(
      2 * perRun,
    );
  });
});
