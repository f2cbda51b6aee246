import { afterEach, describe, expect, it } from 'vitest';
import { startTapServer, type TapServer } from '../../web/server/tap-server.js';
import { readEvents, signIn } from './tap-http.js';

let server: TapServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('tap server', () => {
  it('answers 401 without the token or its cookie on every route, and serves the page with them', async () => {
    server = await startTapServer({ port: 0, title: 'spa.trajectories <x>' });
    expect(server.token).toMatch(/^[0-9a-f]{32}$/);
    const base = `http://127.0.0.1:${server.port}`;
    for (const path of ['/', '/app.js', '/app.css', '/events', '/nope', `/?token=${server.token}x`])
      expect((await fetch(base + path)).status, path).toBe(401);
    const cookie = await signIn(server.url);
    const page = await fetch(base, { headers: { cookie } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('src="app.js"');
    expect(html).not.toContain(server.token); // the page never carries the token
    expect(html).toContain('spa.trajectories &#60;x&#62;'); // the title is escaped
    const js = await fetch(`${base}/app.js`, { headers: { cookie } });
    expect(js.headers.get('content-type')).toContain('javascript');
    expect((await fetch(`${base}/nope`, { headers: { cookie } })).status).toBe(404);
    expect((await fetch(base, { method: 'POST', headers: { cookie } })).status).toBe(405);
  });

  it('replays the backlog (sliding) and the latest stats to a new page, then streams live', async () => {
    server = await startTapServer({ port: 0, backlog: 2, token: 'a'.repeat(32) });
    server.publish('record', { n: 1 });
    server.publish('record', { n: 2 });
    server.publish('stats', { read: 2 });
    server.publish('record', { n: 3 });
    const events = `http://127.0.0.1:${server.port}/events`;
    const cookie = await signIn(server.url);
    const reading = readEvents(events, 4, { cookie });
    await new Promise((resolve) => setTimeout(resolve, 100));
    server.publish('record', { n: 4 });
    const got = await reading;
    expect(got.map((e) => [e.event, e.data])).toEqual([
      ['record', { n: 2 }],
      ['record', { n: 3 }],
      ['stats', { read: 2 }],
      ['record', { n: 4 }],
    ]);
    // A reconnecting EventSource sends Last-Event-ID and gets only the records it missed,
    // then the latest stats.
    const resumed = await readEvents(events, 2, { cookie, 'last-event-id': String(got[1]!.id) });
    expect(resumed.map((e) => e.data)).toEqual([{ n: 4 }, { read: 2 }]);
  });
});
