/**
 * The web tap's HTTP server (node:http, 127.0.0.1 only): the page (`/`, `/app.js`,
 * `/app.css` from the top-level `web/` folder) and a Server-Sent Events stream (`/events`) of
 * records and stats. Every route needs `?token=<token>` (a random 128-bit token made at start,
 * compared in constant time); anything else gets 401, so another local user who finds the port
 * cannot read the topics.
 *
 * Buffering: the server keeps the last `backlog` records (slides) so a page opened late, or an
 * EventSource reconnecting with Last-Event-ID, catches up. A client whose socket buffer passes
 * {@link CLIENT_BUFFER_LIMIT} is dropped (the browser's EventSource reconnects and catches up
 * from the backlog) rather than letting a stalled tab grow memory without bound.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Unsent bytes a slow page may hold before it is dropped (it reconnects and catches up). */
const CLIENT_BUFFER_LIMIT = 8 * 1024 * 1024;

/** The page's files. */
const webAssetsDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'web');

const ASSETS: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
};

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
  /** The page's address, token included. */
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
}

function tokenMatches(given: string | null, token: string): boolean {
  if (given === null) return false;
  const [a, b] = [Buffer.from(given), Buffer.from(token)];
  return a.length === b.length && timingSafeEqual(a, b);
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Starts the server on 127.0.0.1; resolves once it listens. */
export async function startTapServer(options: TapServerOptions): Promise<TapServer> {
  const token = options.token ?? randomBytes(16).toString('hex');
  const backlogSize = options.backlog ?? 200;
  const backlog: Sent[] = [];
  const clients = new Set<ServerResponse>();
  let nextId = 1;
  let lastStats: string | undefined;

  const write = (client: ServerResponse, frame: string): void => {
    if (client.writableLength > CLIENT_BUFFER_LIMIT) {
      clients.delete(client); // drop policy: see the module comment
      client.destroy();
      return;
    }
    client.write(frame);
  };

  const openEvents = (request: IncomingMessage, response: ServerResponse): void => {
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
    });
    const after = Number(request.headers['last-event-id'] ?? 0) || 0;
    response.write('retry: 1000\n\n');
    for (const sent of backlog) if (sent.id > after) response.write(sent.frame);
    if (lastStats !== undefined) response.write(lastStats);
    clients.add(response);
    request.on('close', () => clients.delete(response));
  };

  const serveAsset = async (path: string, response: ServerResponse): Promise<void> => {
    const asset = ASSETS[path];
    if (!asset) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end(`no such page: ${path}\n`);
      return;
    }
    let body = await readFile(join(webAssetsDir, asset.file), 'utf8');
    if (asset.file === 'index.html')
      body = body.replaceAll('{{TOKEN}}', token).replaceAll('{{TITLE}}', escapeHtml(options.title ?? ''));
    response.writeHead(200, { 'content-type': asset.type, 'cache-control': 'no-store' }).end(body);
  };

  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (!tokenMatches(url.searchParams.get('token'), token)) {
      response
        .writeHead(401, { 'content-type': 'text/plain' })
        .end('missing or wrong token: use the URL `spa tap --web` printed at start\n');
      return;
    }
    if (request.method !== 'GET') {
      response.writeHead(405, { allow: 'GET' }).end();
      return;
    }
    if (url.pathname === '/events') return openEvents(request, response);
    serveAsset(url.pathname, response).catch((error: unknown) => {
      response.writeHead(500, { 'content-type': 'text/plain' }).end(`${(error as Error).message}\n`);
    });
  });
  // Keep-alive comments stop proxies and idle timers from closing a quiet stream.
  const heartbeat = setInterval(() => clients.forEach((c) => write(c, ': keep-alive\n\n')), 15_000);
  heartbeat.unref();

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/?token=${token}`,
    port,
    token,
    publish(event, data) {
      const id = nextId++;
      const frame = `id: ${id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
      if (event === 'record') {
        backlog.push({ id, frame });
        if (backlog.length > backlogSize) backlog.shift();
      } else lastStats = frame;
      for (const client of clients) write(client, frame);
    },
    async close() {
      clearInterval(heartbeat);
      for (const client of clients) client.end();
      clients.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections(); // idle keep-alive sockets would hold close() open
      await closed;
    },
  };
}
