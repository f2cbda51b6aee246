/**
 * Issue 36 item 4: the web tap's page logged a 401 in the browser console: the browser fetches
 * the page's icon on its own, without the cookie at times, and every route but none answered 401.
 * The icon (and only it) is served without the token, and it hands out no cookie.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startTapServer, type TapServer } from '../../web/server/tap-server.js';
import { signIn } from '../web/tap-http.js';

let server: TapServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('web tap icon', () => {
  it('the page names an icon that answers without the token, and a wrong token gets no cookie', async () => {
    server = await startTapServer({ port: 0 });
    const base = `http://127.0.0.1:${server.port}`;
    const cookie = await signIn(server.url);
    const html = await (await fetch(base, { headers: { cookie } })).text();
    const icon = /<link rel="icon" href="([^"]+)"/.exec(html)?.[1];
    expect(icon).toBe('favicon.svg');
    for (const path of [`/${icon}`, `/${icon}?token=${'0'.repeat(32)}`]) {
      const response = await fetch(base + path, { redirect: 'manual' });
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/svg+xml');
      expect(response.headers.get('set-cookie'), path).toBeNull();
      expect(await response.text()).toMatch(/^<svg /);
    }
    // Nothing else opened up: the page, its script and the event stream still want the token.
    for (const path of ['/', '/app.js', '/events', '/favicon.ico', '/favicon.svg/../app.js'])
      expect((await fetch(base + path)).status, path).toBe(401);
    expect((await fetch(`${base}/favicon.svg`, { method: 'POST' })).status).toBe(405);
  });
});
