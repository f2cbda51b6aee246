/**
 * The web tap's HTTP surface as an attacker meets it (issue 33 item 6): security headers on
 * every answer, a foreign Host (DNS rebinding) refused, event streams capped, the record backlog
 * bounded in bytes, and the token traded for a port-scoped HttpOnly SameSite=Strict cookie on
 * the first load.
 */
import { request as httpRequest, type ClientRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BACKLOG_BYTES,
  MAX_EVENT_STREAMS,
  startTapServer,
  type TapServer,
} from '../../web/server/tap-server.js';
import { rawGet, readEvents, signIn } from '../web/tap-http.js';

let server: TapServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const CSP = "default-src 'self'; frame-ancestors 'none'";

describe('web tap HTTP hardening', () => {
  it('sends CSP, nosniff and no-referrer on every answer: page, assets, events, 303, 401, 403, 404', async () => {
    server = await startTapServer({ port: 0 });
    const base = `http://127.0.0.1:${server.port}`;
    const cookie = await signIn(server.url);
    const answers = [
      await fetch(server.url, { redirect: 'manual' }), // 303
      await fetch(base), // 401
      await fetch(`${base}/`, { headers: { cookie } }),
      await fetch(`${base}/app.js`, { headers: { cookie } }),
      await fetch(`${base}/app.css`, { headers: { cookie } }),
      await fetch(`${base}/nope`, { headers: { cookie } }), // 404
    ];
    const forbidden = await rawGet(server.port, '/', { host: 'evil.example', cookie });
    const events = await fetch(`${base}/events`, { headers: { cookie } });
    for (const response of [...answers, events]) {
      expect(response.headers.get('content-security-policy'), response.url).toBe(CSP);
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    }
    await events.body!.cancel();
    expect(answers.map((r) => r.status)).toEqual([303, 401, 200, 200, 200, 404]);
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers['content-security-policy']).toBe(CSP);
  });

  it("serves a page CSP allows: no inline script, style or event handler, assets from 'self'", async () => {
    server = await startTapServer({ port: 0 });
    const cookie = await signIn(server.url);
    const html = await (await fetch(`http://127.0.0.1:${server.port}/`, { headers: { cookie } })).text();
    expect(html).not.toMatch(/<style|style=|\son[a-z]+=/i);
    const scripts = [...html.matchAll(/<script\b([^>]*)>/g)].map((m) => m[1]);
    expect(scripts).toEqual([' type="module" src="app.js"']);
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//); // nothing from another origin
  });

  it('answers 403 to a Host that is not its own loopback name and port (DNS rebinding)', async () => {
    server = await startTapServer({ port: 0 });
    const cookie = await signIn(server.url);
    const port = server.port;
    for (const host of [
      'evil.example',
      `evil.example:${port}`,
      `127.0.0.1:${port + 1}`,
      '127.0.0.1',
      'localhost',
    ]) {
      const answer = await rawGet(port, '/', { host, cookie });
      expect(answer.status, host).toBe(403);
      expect(answer.body).toContain(`127.0.0.1:${port}`);
    }
    // Refused before the token is looked at: a rebinding page cannot probe for it.
    expect((await rawGet(port, `/?token=${server.token}`, { host: 'evil.example' })).status).toBe(403);
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LocalHost:${port}`, `[::1]:${port}`])
      expect((await rawGet(port, '/', { host, cookie })).status, host).toBe(200);
  });

  it(`caps open event streams at ${MAX_EVENT_STREAMS}, then 503; a closed one makes room`, async () => {
    server = await startTapServer({ port: 0 });
    const cookie = await signIn(server.url);
    const port = server.port;
    const open: ClientRequest[] = [];
    const openStream = (): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port, path: '/events', headers: { cookie } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
        open.push(req);
      });
    try {
      for (let i = 0; i < MAX_EVENT_STREAMS; i++) expect(await openStream()).toBe(200);
      const refused = await rawGet(port, '/events', { host: `127.0.0.1:${port}`, cookie });
      expect(refused.status).toBe(503);
      expect(refused.body).toContain(`${MAX_EVENT_STREAMS} event streams`);
      open.shift()!.destroy();
      await expect.poll(openStream, { timeout: 5000 }).toBe(200);
    } finally {
      for (const req of open) req.destroy();
    }
  });

  it(`keeps at most ${BACKLOG_BYTES / 2 ** 20} MiB of records for late pages; a larger record is sent, not kept`, async () => {
    server = await startTapServer({ port: 0 });
    const cookie = await signIn(server.url);
    const events = `http://127.0.0.1:${server.port}/events`;
    const live = readEvents(events, 41, { cookie });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const mib = 'x'.repeat(2 ** 20);
    for (let n = 0; n < 40; n++) {
      server.publish('record', { n, text: mib });
      await new Promise((resolve) => setTimeout(resolve, 20)); // a reading page, not a stalled one
    }
    server.publish('record', { n: 40, text: 'x'.repeat(BACKLOG_BYTES) }); // alone over the bound
    // An open page gets every record, the oversized one included.
    expect((await live).map((e) => (e.data as { n: number }).n)).toEqual([...Array(41).keys()]);
    // A late page gets the newest records that fit the bound: 15 of 1 MiB, never the oversized one.
    server.publish('stats', { read: 41 });
    const late = await readEvents(events, 1, { cookie }, (e) => e.event === 'stats');
    const kept = late.filter((e) => e.event === 'record').map((e) => (e.data as { n: number }).n);
    expect(kept).toEqual([25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39]);
  });

  it('trades the token for an HttpOnly SameSite=Strict cookie and a 303 to the token-less address', async () => {
    server = await startTapServer({ port: 0 });
    const base = `http://127.0.0.1:${server.port}`;
    const first = await fetch(server.url, { redirect: 'manual' });
    expect(first.status).toBe(303);
    expect(first.headers.get('location')).toBe('/');
    const setCookie = first.headers.get('set-cookie')!;
    expect(setCookie).toBe(`spa_tap_${server.port}=${server.token}; HttpOnly; SameSite=Strict; Path=/`);
    // Any route: the token goes, the rest of the query stays.
    const asset = await fetch(`${base}/app.js?x=1&token=${server.token}`, { redirect: 'manual' });
    expect(asset.headers.get('location')).toBe('/app.js?x=1');
    const cookie = setCookie.split(';')[0]!;
    expect((await fetch(base, { headers: { cookie: `other=1; ${cookie}` } })).status).toBe(200);
    const stream = await fetch(`${base}/events`, { headers: { cookie } });
    expect(stream.status).toBe(200);
    await stream.body!.cancel();
    // 401 without either, with a wrong one, or with another port's cookie.
    for (const sent of ['', `spa_tap_${server.port}=${'0'.repeat(32)}`, `spa_tap_1=${server.token}`])
      expect((await fetch(base, { headers: { cookie: sent } })).status, sent).toBe(401);
    expect((await fetch(`${base}/?token=nope`, { redirect: 'manual' })).status).toBe(401);
  });
});
