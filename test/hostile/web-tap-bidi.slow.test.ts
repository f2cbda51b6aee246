/**
 * Issue 42 item 4, the page: a card whose key and text hold bidi controls and zero-width characters
 * is drawn in Chromium with each of them visibly escaped (`\u202E`), none raw in the rendered HTML,
 * and every card and every record value isolates its text direction. Slow only for the browser: the
 * tap server is fed the card directly (no broker).
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { BrowserContext } from 'playwright-core';
import { spaSchemas, type Rejected } from '../../schemas/index.js';
import { decodeAnySpaRecord } from '../../streams/kafka/consume-spa-decode.js';
import { startTapServer, type TapServer } from '../../web/server/tap-server.js';
import { toWebRecord } from '../../web/server/web-record.js';
import { launchChromium } from '../web/chromium.js';

/** Bidi embeddings, overrides, isolates, the Arabic letter mark, zero-width and separator characters. */
const HIDDEN =
  '\u202A\u202B\u202C\u202D\u202E\u2066\u2067\u2068\u2069\u061C\u200B\u200C\u200D\u200E\u200F\u2028\u2029\uFEFF';
/** The characters of {@link HIDDEN} that `text` holds raw, by code point. */
const raw = (text: string) =>
  [...HIDDEN].filter((c) => text.includes(c)).map((c) => `U+${c.codePointAt(0)!.toString(16).toUpperCase()}`);

const rejected: Rejected = {
  key: 'k\u202Eyek',
  source: 'spa.\u2067evil',
  reason: 'bad-row',
  detail: `detail ${HIDDEN} end`,
  payload: Buffer.from('{}'),
  payload_fingerprint: null,
  created_at: 1_767_225_600_000,
};

let browser: BrowserContext | undefined;
let server: TapServer | undefined;

beforeAll(async () => {
  browser = await launchChromium();
  server = await startTapServer({ port: 0, title: 'hostile bidi' });
  const card = toWebRecord(
    decodeAnySpaRecord({
      topic: 'spa.dlq',
      partition: 0,
      offset: 1n,
      key: Buffer.from('k\u202Eyek'),
      value: spaSchemas().encode('Rejected', rejected),
      headers: {},
      timestamp: 1_767_225_600_000,
    }),
  );
  server.publish('record', card);
}, 900_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

it('draws bidi and zero-width characters escaped, each value in an isolated <bdi>', async () => {
  const page = await browser!.newPage();
  await page.goto(server!.url);
  const card = page.locator('.card.Rejected').first();
  await card.waitFor({ timeout: 30_000 });
  const html = await page.locator('#feed').innerHTML();
  const text = await card.innerText();
  expect(raw(html)).toEqual([]);
  expect(raw(text)).toEqual([]);
  expect(text).toContain('key k\\u202Eyek');
  expect(text).toContain('from spa.\\u2067evil');
  expect(text).toContain('detail \\u202A\\u202B\\u202C\\u202D\\u202E\\u2066');
  // The key is a value of its own, isolated from the labels around it; so is the card.
  // A string, not a function: the test's TypeScript has no DOM types.
  const isolation = (await page.evaluate(`(() => {
    const article = document.querySelector('.card.Rejected');
    return {
      dir: article.getAttribute('dir'),
      card: getComputedStyle(article).unicodeBidi,
      values: [...article.querySelectorAll('bdi')].map((b) => [b.textContent, getComputedStyle(b).unicodeBidi]),
    };
  })()`)) as { dir: string | null; card: string; values: [string, string][] };
  expect(isolation.dir).toBe('auto');
  expect(isolation.card).toBe('isolate');
  expect(isolation.values).toContainEqual(['k\\u202Eyek', 'isolate']);
  expect(isolation.values).toContainEqual(['spa.\\u2067evil', 'isolate']);
  await page.close();
});
