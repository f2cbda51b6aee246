/**
 * `spa tap --web` end to end: a real broker, records from the generator pipeline for all three
 * envs (plus malformed episodes that go to the dead-letter topic), the CLI serving the page, and
 * Debian's Chromium (driven by playwright-core) seeing the records arrive — history first, then
 * records produced while the page is open. Takes a screenshot to test-results/tap-web.png.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrowserContext, Page } from 'playwright-core';
import { envFactory } from '../../envs/registry.js';
import type { EnvName } from '../../envs/types.js';
import type { KafkaAdmin } from '../../infra/kafka/client/admin.js';
import { applyTopicsTo } from '../../infra/kafka/topics.js';
import { spaTopicNames, spaTopics } from '../../schemas/topics.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { generatorPipeline } from '../../streams/generator-pipeline.js';
import type { KafkaConnection } from '../../streams/kafka/consume-spa.js';
import { kafkaTransport, openKafkaAdmin } from '../../infra/kafka/client/kafka-client.js';
import { publishOutbound } from '../../streams/kafka/publish-outbound.js';
import { oraclePolicy } from '../../policies/oracle-policy.js';
import type { Policy } from '../../policies/policy.js';
import { randomPolicy } from '../../policies/random-policy.js';
import { startTestBroker, stopTestBroker, testConnection } from '../kafka/harness.js';
import { evilDeadLetter } from '../hostile/web-tap-records.js';
import { launchChromium } from './chromium.js';

const ports = { port: 19470, controllerPort: 19471 };
const topics = spaTopicNames();
const screenshot = 'test-results/tap-web.png';
let brokers: readonly string[];
let kafka: KafkaConnection;
let admin: KafkaAdmin;
let tapProcess: ChildProcess | undefined;
let pageUrl: string;
let browser: BrowserContext | undefined;
let page: Page;

/** The oracle's plan, but it believes the board will not change: its prediction is its observation. */
function staticBeliefPolicy(): Policy {
  const oracle = oraclePolicy({ mode: 'wm' });
  return {
    name: 'static-belief',
    version: 3,
    act: async (requests) =>
      (await oracle.act(requests)).map((text) => {
        const observation = /<observation>(.*?)<\/observation>/s.exec(text)?.[1] ?? '';
        return text.replace(
          /<prediction>.*?<\/prediction>/s,
          () => `<prediction>${observation}</prediction>`,
        );
      }),
  };
}

/** Text with no world-model format at all: every turn fails to parse and (FrozenLake) every row is rejected. */
const malformedPolicy: Policy = {
  name: 'malformed',
  version: 0,
  act: async (requests) => requests.map(() => ' I am not sure what to do.'),
};

/** Plays `groups × 2` episodes of `env` with `policy` and publishes every output transactionally. */
async function produce(env: EnvName, policy: Policy, runId: string, groups = 2): Promise<void> {
  const config = episodeConfig({ env, groups, groupSize: 2, batches: 1, runId, mode: 'wm' });
  const outputs = generatorPipeline(config, envFactory({ name: env, puzzles: 'generated' }), policy, {
    target: 'sft',
  });
  const sink = await kafka.transport.sink({ transactionalId: `tap-web-${runId}` });
  try {
    await publishOutbound(outputs, sink, { topics });
  } finally {
    await sink.close();
  }
}

/** Starts `spa tap --web` and resolves with the URL it prints. */
function startTap(): Promise<string> {
  const child = spawn(process.execPath, ['bin/spa.mjs', 'tap', '--web', '--port', '0'], {
    env: { ...process.env, KAFKA_BROKERS: brokers.join(',') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  tapProcess = child;
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve, reject) => {
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const url = /open (http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]+)/.exec(stdout)?.[1];
      if (url) resolve(url);
    });
    child.on('exit', (code) => reject(new Error(`spa tap --web exited with ${code}:\n${stderr}`)));
  });
}

beforeAll(async () => {
  // First, so a fresh machine's apt-get install of Chromium fails fast and clearly.
  browser = await launchChromium();
}, 900_000);

afterAll(async () => {
  await browser?.close();
});

// A fresh broker: the tap reads SPA's default topics, and its page counts what it sees.
describe('spa tap --web', () => {
  beforeAll(async () => {
    brokers = (await startTestBroker('web', ports)).brokers;
    const config = testConnection(brokers);
    // Kafka 4 refuses records stamped over an hour ahead unless the topic allows them (KIP-1030);
    // the dead-letter topic does here, so the odd-timestamp card below has its record.
    const future = { 'message.timestamp.after.max.ms': String(2n ** 63n - 1n) };
    await applyTopicsTo(
      brokers,
      spaTopics().map((t) => (t.role === 'dlq' ? { ...t, configs: { ...t.configs, ...future } } : t)),
    );
    kafka = { transport: kafkaTransport(config), config };
    admin = await openKafkaAdmin(config);
    // History written before the tap starts.
    await produce('sokoban', staticBeliefPolicy(), 'hist-sokoban');
    await produce('frozenlake', oraclePolicy({ mode: 'wm' }), 'hist-frozenlake');
    await produce('sudoku', randomPolicy({ mode: 'wm', seed: 7 }), 'hist-sudoku');
    await produce('frozenlake', malformedPolicy, 'hist-malformed', 1);
    pageUrl = await startTap();
    page = await browser!.newPage();
  }, 900_000);

  afterAll(async () => {
    await page?.close();
    if (tapProcess && tapProcess.exitCode === null) {
      tapProcess.kill('SIGINT');
      await new Promise((resolve) => tapProcess!.once('exit', resolve));
    }
    await admin?.close();
    await kafka?.transport.close();
    await stopTestBroker('web', ports);
  });

  it('refuses requests without the right token (401); the right one becomes a cookie (303)', async () => {
    const url = new URL(pageUrl);
    const wrong = new URL(pageUrl);
    wrong.searchParams.set('token', '0'.repeat(32));
    const eventsWrong = new URL('/events?token=nope', url);
    for (const target of [`${url.origin}/`, wrong.href, eventsWrong.href, `${url.origin}/app.js`]) {
      const response = await fetch(target);
      expect(response.status, target).toBe(401);
    }
    const first = await fetch(pageUrl, { redirect: 'manual' });
    expect(first.status).toBe(303);
    expect(first.headers.get('location')).toBe('/');
    expect(first.headers.get('set-cookie')).toContain('HttpOnly; SameSite=Strict');
    expect(url.hostname).toBe('127.0.0.1');
  });

  it('shows boards, beliefs beside the truth, parse outcomes, rejects and stats in Chromium', async () => {
    const violations: string[] = [];
    const errors: string[] = [];
    page.on('console', (message) => {
      if (/Content.Security.Policy/i.test(message.text())) violations.push(message.text());
      if (message.type() === 'error') errors.push(`${message.text()} ${message.location().url}`);
    });
    // Every request the page makes, the icon the browser fetches on its own too (issue 36: a 401).
    page.on('response', (response) => {
      if (response.status() >= 400) errors.push(`${response.status()} ${response.url()}`);
    });
    await page.goto(pageUrl);
    // The token left the address for a cookie the page cannot read (HttpOnly).
    expect(page.url()).toBe(`${new URL(pageUrl).origin}/`);
    expect(await page.evaluate('document.cookie')).toBe('');
    await page.locator('#status.live').waitFor({ timeout: 30_000 });
    // History: a sokoban trajectory whose model kept its board unchanged in the prediction.
    const sokoban = page.locator('.card.Trajectory', { hasText: 'hist-sokoban/train/b0/g0/m0' }).first();
    await sokoban.waitFor({ timeout: 60_000 });
    const firstTurn = sokoban.locator('.turn').first();
    await expect.poll(() => firstTurn.textContent()).toContain('parse ok (strict match)');
    // The true board before turn 0 is drawn row by row; its first row is the wall row.
    const before = firstTurn.locator('.board').nth(0);
    expect(await before.locator('.row').first().textContent()).toMatch(/^#+$/);
    expect(await before.textContent()).toContain('Player (P) is at');
    // The static prediction differs from the true board after the move: those cells are marked.
    const prediction = firstTurn.locator('.board').nth(3);
    expect(await prediction.locator('.label').textContent()).toBe("model's prediction");
    expect(await prediction.locator('.cell.diff').count()).toBeGreaterThan(0);
    // The observation was right: nothing marked.
    expect(await firstTurn.locator('.board').nth(1).locator('.cell.diff').count()).toBe(0);

    // Dead letters: the reason, and the rejected row's turn and response.
    const rejected = page.locator('.card.Rejected', { hasText: 'reason malformed-turn' }).first();
    await rejected.waitFor({ timeout: 30_000 });
    expect(await rejected.textContent()).toContain('reason malformed-turn');
    expect(await rejected.textContent()).toMatch(/frozenlake turn \d+: rejected response/);
    expect(await rejected.textContent()).toContain('I am not sure what to do.');

    // Sudoku boards split into rows of cells; FrozenLake boards appear too.
    const sudoku = page.locator('.card.Trajectory', { hasText: 'sudoku (easy)' }).first();
    await sudoku.waitFor({ timeout: 30_000 });
    expect(await sudoku.locator('.turn .board').first().locator('.row').count()).toBe(4);
    await page.locator('.card.Trajectory', { hasText: 'frozenlake (4x4)' }).first().waitFor();

    // Per-env success and Pass@k for all three envs.
    await expect.poll(() => page.locator('#envs tbody tr').count(), { timeout: 15_000 }).toBe(3);
    const table = await page.locator('#envs').textContent();
    for (const env of ['sokoban', 'frozenlake', 'sudoku']) expect(table).toContain(env);
    expect(table).toContain('(k=2)');
    // Pass@1 and Pass@k of the same full groups: never Pass@1 above Pass@k (issue 36).
    // (columns: env, stage, episodes, success rate, full groups, Pass@1, Pass@k)
    for (const row of await page.locator('#envs tbody tr').all()) {
      const [pass1, passK] = (await row.locator('td').allTextContents()).slice(5).map(parseFloat);
      expect(pass1).toBeLessThanOrEqual(passK!);
    }
    await expect.poll(() => page.locator('#throughput polyline').count(), { timeout: 15_000 }).toBe(1);
    expect(violations).toEqual([]); // CSP (default-src 'self') blocked nothing the page needs
    expect(errors).toEqual([]); // no 401 (or 404) in the console, the icon's included
  });

  it('streams records produced while the page is open', async () => {
    await produce('frozenlake', oraclePolicy({ mode: 'wm' }), 'live-frozenlake', 1);
    const live = page.locator('.card.Trajectory', { hasText: 'live-frozenlake/train/b0/g0/m1' });
    await live.first().waitFor({ timeout: 60_000 });
    expect(await live.first().textContent()).toContain('frozenlake (4x4)');
    // Let the stats tick catch up so the screenshot shows lag and throughput.
    await page.waitForTimeout(1500);
    mkdirSync('test-results', { recursive: true });
    await page.screenshot({ path: screenshot });
    const png = readFileSync(screenshot);
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    expect(png.length).toBeGreaterThan(20_000);
  });

  it('draws odd records as cards saying why, and goes on (issue 33)', async () => {
    const sink = await kafka.transport.sink();
    await sink.send([
      // A valid Rejected whose JSON payload is no trajectory, written at a time Date cannot show.
      { ...evilDeadLetter(topics.dlq), timestamp: 9e15 },
      { topic: topics.dlq, key: Buffer.from('garbage'), value: Buffer.from([0xc3, 0x01, 0xff]) },
    ]);
    await sink.close();
    await produce('frozenlake', oraclePolicy({ mode: 'wm' }), 'after-odd', 1);
    const evil = page.locator('.card.Rejected', { hasText: 'key evil' }).first();
    await evil.waitFor({ timeout: 60_000 });
    expect(await evil.textContent()).toContain('payload: JSON, but not a trajectory (group_id: missing');
    expect(await evil.textContent()).toContain('timestamp 9000000000000000');
    const garbage = page.locator('.card.Undecodable', { hasText: 'key garbage' }).first();
    await garbage.waitFor({ timeout: 30_000 });
    expect(await garbage.textContent()).toContain('reason truncated');
    await page
      .locator('.card.Trajectory', { hasText: 'after-odd/train/b0/g0/m1' })
      .first()
      .waitFor({ timeout: 60_000 });
  });

  it('stops on SIGINT and leaves no consumer group behind', async () => {
    const exited = new Promise<number | null>((resolve) => tapProcess!.once('exit', resolve));
    tapProcess!.kill('SIGINT');
    expect(await exited).toBe(0);
    const groups = await admin.listGroups();
    expect(groups.filter((g) => g.groupId.startsWith('spa-tap-web-'))).toEqual([]);
  });
});
