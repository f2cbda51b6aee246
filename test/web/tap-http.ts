/**
 * HTTP helpers for the web tap's tests: the first load that trades the printed token for a
 * cookie, a Server-Sent Events reader, and raw requests whose Host header the test picks
 * (fetch always sends the URL's own).
 */
import { request as httpRequest } from 'node:http';
import { expect } from 'vitest';

/** One SSE event as the page gets it. */
export interface TapEvent {
  readonly id: number;
  readonly event: string;
  readonly data: unknown;
}

/** Opens the printed URL like a browser's first load; resolves with the Cookie header to send. */
export async function signIn(url: string): Promise<string> {
  const first = await fetch(url, { redirect: 'manual' });
  expect(first.status).toBe(303);
  return first.headers.get('set-cookie')!.split(';')[0]!;
}

/**
 * Reads SSE frames from `url` until `count` events have arrived for which `counts` holds
 * (default: every `record`/`stats` event), or the stream ends; fails after 60 s.
 */
export async function readEvents(
  url: string,
  count: number,
  headers: Record<string, string> = {},
  counts: (event: TapEvent) => boolean = () => true,
): Promise<TapEvent[]> {
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(60_000) });
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  const reader = response.body!.getReader();
  const events: TapEvent[] = [];
  let counted = 0;
  let text = '';
  while (counted < count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += Buffer.from(value).toString('utf8');
    let end: number;
    while ((end = text.indexOf('\n\n')) >= 0) {
      const frame = text.slice(0, end);
      text = text.slice(end + 2);
      const field = (name: string) => new RegExp(`^${name}: (.*)$`, 'm').exec(frame)?.[1];
      const event = field('event');
      if (!event) continue;
      const parsed = { id: Number(field('id')), event, data: JSON.parse(field('data')!) as unknown };
      events.push(parsed);
      if (counts(parsed)) counted += 1;
    }
  }
  await reader.cancel();
  return events;
}

/** A raw GET to 127.0.0.1:`port` with the given headers (Host included); the body is read whole. */
export function rawGet(
  port: number,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () =>
        resolve({ status: response.statusCode ?? 0, headers: response.headers, body }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}
