import { afterEach, describe, expect, it } from 'vitest';
import { startTapServer, type TapServer } from '../../streams/web/tap-server.js';

let server: TapServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Reads SSE frames from `/events` until `count` `record`/`stats` events have arrived. */
async function readEvents(url: string, count: number, headers: Record<string, string> = {}) {
  const response = await fetch(url, { headers });
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  const reader = response.body!.getReader();
  const events: { id: number; event: string; data: unknown }[] = [];
  let text = '';
  while (events.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += Buffer.from(value).toString('utf8');
    let end: number;
    while ((end = text.indexOf('\n\n')) >= 0) {
      const frame = text.slice(0, end);
      text = text.slice(end + 2);
      const field = (name: string) => new RegExp(`^${name}: (.*)$`, 'm').exec(frame)?.[1];
      const event = field('event');
      if (event) events.push({ id: Number(field('id')), event, data: JSON.parse(field('data')!) });
    }
  }
  await reader.cancel();
  return events;
}

describe('tap server', () => {
  it('answers 401 without the token on every route, and serves the page with it', async () => {
    server = await startTapServer({ port: 0, title: 'spa.trajectories <x>' });
    expect(server.token).toMatch(/^[0-9a-f]{32}$/);
    const base = `http://127.0.0.1:${server.port}`;
    for (const path of ['/', '/app.js', '/app.css', '/events', '/nope', `/?token=${server.token}x`])
      expect((await fetch(base + path)).status, path).toBe(401);
    const page = await fetch(server.url);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`app.js?token=${server.token}`);
    expect(html).toContain('spa.trajectories &#60;x&#62;'); // the title is escaped
    const js = await fetch(`${base}/app.js?token=${server.token}`);
    expect(js.headers.get('content-type')).toContain('javascript');
    expect((await fetch(`${base}/nope?token=${server.token}`)).status).toBe(404);
    expect((await fetch(server.url, { method: 'POST' })).status).toBe(405);
  });

  it('replays the backlog (sliding) and the latest stats to a new page, then streams live', async () => {
    server = await startTapServer({ port: 0, backlog: 2, token: 'a'.repeat(32) });
    server.publish('record', { n: 1 });
    server.publish('record', { n: 2 });
    server.publish('stats', { read: 2 });
    server.publish('record', { n: 3 });
    const events = `http://127.0.0.1:${server.port}/events?token=${'a'.repeat(32)}`;
    const reading = readEvents(events, 4);
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
    const resumed = await readEvents(events, 2, { 'last-event-id': String(got[1]!.id) });
    expect(resumed.map((e) => e.data)).toEqual([{ n: 4 }, { read: 2 }]);
  });
});
