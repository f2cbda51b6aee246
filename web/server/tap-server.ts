/**
 * The web tap's HTTP server (node:http, 127.0.0.1 only): the page (`/`, `/app.js`,
 * `/app.css` from `web/`, the folder above this one) and a Server-Sent Events stream (`/events`) of
 * records and stats.
 *
 * Access: the printed URL carries a random 128-bit token. The first request with a right
 * `?token=` gets an HttpOnly, SameSite=Strict cookie (named after the port: cookies are shared
 * by every port of a host) and a 303 to the same address without the token, so the token leaves
 * the address bar and history; later requests show the cookie. Both are compared in constant
 * time; without either every route answers 401, so another local user who finds the port cannot
 * read the topics — but the icon, which shows nothing of them: a browser fetches it on its own
 * (without the cookie at times), and a 401 there would be an error in the page's console. A Host header other than this server's loopback name and port gets 403 (a
 * page on another site that rebinds its DNS name to 127.0.0.1 sends its own name). Every
 * response carries a CSP (`default-src 'self'`: the page has no inline script or style, and no
 * frames may hold it), `nosniff` and `Referrer-Policy: no-referrer`.
 *
 * Buffering: the server keeps the last `backlog` records, at most {@link BACKLOG_BYTES} of them
 * (slides: the oldest go first), so a page opened late, or an EventSource reconnecting with
 * Last-Event-ID, catches up. A client whose socket buffer passes {@link CLIENT_BUFFER_LIMIT} is
 * dropped (the browser's EventSource reconnects and catches up from the backlog) rather than
 * letting a stalled tab grow memory without bound. At most {@link MAX_EVENT_STREAMS} streams are
 * open at once; one more gets 503.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Unsent bytes a slow page may hold before it is dropped (it reconnects and catches up). */
const CLIENT_BUFFER_LIMIT = 8 * 1024 * 1024;
/** Event streams open at once (a page holds one; room for a few tabs and reconnects); then 503. */
export const MAX_EVENT_STREAMS = 16;
/** Bytes of record frames kept for late pages; a frame larger than this alone is sent, not kept. */
export const BACKLOG_BYTES = 16 * 1024 * 1024;

/** Sent with every response. */
const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
} as const;

/** The page's files. */
const webAssetsDir = join(dirname(fileURLToPath(import.meta.url)), '..');

const ASSETS: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
  '/favicon.svg': { file: 'favicon.svg', type: 'image/svg+xml' },
};

/** Served without the token (see the module comment). */
const PUBLIC_PATHS: ReadonlySet<string> = new Set(['/favicon.svg']);

/** Options of {@link startTapServer}. */
export interface TapServerOptions {
  /** 0 picks a free port. */
  readonly port: number;
  /** Records kept for late pages. Default 200. */
  readonly backlog?: number;
  /** Fixed token (tests); default a fresh random one. */
  readonly token?: string;
  /** Shown in the page's header, e.g. the tapped topics. */
  readonly title?: string;
}

/** A running server. */
export interface TapServer {
  /** The page's address, token included (the first load trades it for a cookie). */
  readonly url: string;
  readonly port: number;
  readonly token: string;
  /** Sends one event to every page (and keeps `record` events in the backlog). */
  publish(event: 'record' | 'stats', data: unknown): void;
  close(): Promise<void>;
}

interface Sent {
  readonly id: number;
  readonly frame: string;
  readonly bytes: number;
}

function tokenMatches(given: string | undefined, token: string): boolean {
  if (given === undefined) return false;
  const [a, b] = [Buffer.from(given), Buffer.from(token)];
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The value of cookie `name` in a Cookie header. Hand-written: one cookie of hex digits is read,
 * and the `cookie` package would be a dependency for a split.
 */
function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const pair of (header ?? '').split(';')) {
    const at = pair.indexOf('=');
    if (at !== -1 && pair.slice(0, at).trim() === name) return pair.slice(at + 1).trim();
  }
  return undefined;
}

/** The Host values this server answers to: its loopback names with its port. */
const ownHosts = (port: number): ReadonlySet<string> =>
  new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`]);

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A plain-text answer (errors and refusals). */
function reply(response: ServerResponse, status: number, text: string, headers = {}): void {
  response
    .writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8', ...headers })
    .end(`${text}\n`);
}

/** The Server-Sent Events side: the pages connected now and the backlog late ones catch up from. */
class EventStreams {
  private readonly backlog: Sent[] = [];
  private backlogBytes = 0;
  private readonly clients = new Set<ServerResponse>();
  private nextId = 1;
  private lastStats: string | undefined;
  private readonly heartbeat: NodeJS.Timeout;

  constructor(private readonly backlogSize: number) {
    // Keep-alive comments stop proxies and idle timers from closing a quiet stream.
    this.heartbeat = setInterval(
      () => this.clients.forEach((c) => this.write(c, ': keep-alive\n\n')),
      15_000,
    );
    this.heartbeat.unref();
  }

  /** `/events`: the backlog after the client's Last-Event-ID, the last stats, then what comes. */
  open(request: IncomingMessage, response: ServerResponse): void {
    if (this.clients.size >= MAX_EVENT_STREAMS) {
      reply(response, 503, `${MAX_EVENT_STREAMS} event streams are open already; close a tab`, {
        'retry-after': '5',
      });
      return;
    }
    response.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
    });
    const after = Number(request.headers['last-event-id'] ?? 0) || 0;
    response.write('retry: 1000\n\n');
    for (const sent of this.backlog) if (sent.id > after) response.write(sent.frame);
    if (this.lastStats !== undefined) response.write(this.lastStats);
    this.clients.add(response);
    request.on('close', () => this.clients.delete(response));
  }

  publish(event: 'record' | 'stats', data: unknown): void {
    const id = this.nextId++;
    const frame = `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    if (event === 'record') this.keep({ id, frame, bytes: Buffer.byteLength(frame) });
    else this.lastStats = frame;
    for (const client of this.clients) this.write(client, frame);
  }

  close(): void {
    clearInterval(this.heartbeat);
    for (const client of this.clients) client.end();
    this.clients.clear();
  }

  private write(client: ServerResponse, frame: string): void {
    if (client.writableLength > CLIENT_BUFFER_LIMIT) {
      this.clients.delete(client); // drop policy: see the module comment
      client.destroy();
      return;
    }
    client.write(frame);
  }

  private keep(sent: Sent): void {
    if (sent.bytes > BACKLOG_BYTES) return; // see BACKLOG_BYTES
    this.backlog.push(sent);
    this.backlogBytes += sent.bytes;
    while (this.backlog.length > this.backlogSize || this.backlogBytes > BACKLOG_BYTES)
      this.backlogBytes -= this.backlog.shift()!.bytes;
  }
}

async function serveAsset(path: string, title: string, response: ServerResponse): Promise<void> {
  const asset = ASSETS[path];
  if (!asset) return reply(response, 404, `no such page: ${path}`);
  let body = await readFile(join(webAssetsDir, asset.file), 'utf8');
  if (asset.file === 'index.html') body = body.replaceAll('{{TITLE}}', escapeHtml(title));
  response
    .writeHead(200, { ...SECURITY_HEADERS, 'content-type': asset.type, 'cache-control': 'no-store' })
    .end(body);
}

/** What a request is checked against; `hosts` and `cookieName` are set once the port is known. */
interface Access {
  readonly token: string;
  hosts: ReadonlySet<string>;
  cookieName: string;
}

/** 303 to `url` without its token, setting the cookie that stands for it from now on. */
function tradeTokenForCookie(url: URL, access: Access, response: ServerResponse): void {
  url.searchParams.delete('token');
  response
    .writeHead(303, {
      ...SECURITY_HEADERS,
      location: url.pathname + url.search,
      'set-cookie': `${access.cookieName}=${access.token}; HttpOnly; SameSite=Strict; Path=/`,
      'cache-control': 'no-store',
    })
    .end();
}

/** One request: Host, then token or cookie, then method, then the route (module comment). */
function handle(
  request: IncomingMessage,
  response: ServerResponse,
  access: Access,
  streams: EventStreams,
  title: string,
): void {
  if (!access.hosts.has(request.headers.host?.toLowerCase() ?? '')) {
    reply(response, 403, `wrong Host: this server answers to ${[...access.hosts].join(', ')}`);
    return;
  }
  const url = new URL(request.url ?? '/', 'http://127.0.0.1');
  const given = url.searchParams.get('token') ?? cookieValue(request.headers.cookie, access.cookieName);
  const allowed = tokenMatches(given, access.token);
  if (!allowed && !PUBLIC_PATHS.has(url.pathname)) {
    reply(response, 401, 'missing or wrong token: open the URL `spa tap --web` printed at start');
    return;
  }
  if (request.method !== 'GET') {
    response.writeHead(405, { ...SECURITY_HEADERS, allow: 'GET' }).end();
    return;
  }
  // `allowed` with a token in the address: the right one, traded for the cookie.
  if (allowed && url.searchParams.has('token')) return tradeTokenForCookie(url, access, response);
  if (url.pathname === '/events') return streams.open(request, response);
  serveAsset(url.pathname, title, response).catch((error: unknown) => {
    reply(response, 500, (error as Error).message);
  });
}

/** Starts the server on 127.0.0.1; resolves once it listens. */
export async function startTapServer(options: TapServerOptions): Promise<TapServer> {
  const access: Access = {
    token: options.token ?? randomBytes(16).toString('hex'),
    hosts: new Set(),
    cookieName: '',
  };
  const streams = new EventStreams(options.backlog ?? 200);
  const server: Server = createServer((request, response) =>
    handle(request, response, access, streams, options.title ?? ''),
  );
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, '127.0.0.1', () => resolve());
    });
  } catch (error) {
    streams.close();
    throw error;
  }
  const port = (server.address() as AddressInfo).port;
  access.hosts = ownHosts(port);
  access.cookieName = `spa_tap_${port}`;
  return {
    url: `http://127.0.0.1:${port}/?token=${access.token}`,
    port,
    token: access.token,
    publish: (event, data) => streams.publish(event, data),
    async close() {
      streams.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections(); // idle keep-alive sockets would hold close() open
      await closed;
    },
  };
}
