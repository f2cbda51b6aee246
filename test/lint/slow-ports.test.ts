/**
 * `npm test` runs two files at a time (vitest.config.ts): each slow file's brokers need ports of
 * their own. A cluster `{ brokers: n, port: p }` takes p to p + 2n - 1 (infra/kafka/cluster.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** The ports a slow test file's source names (literals 19000-19999), its clusters' whole ranges. */
function portsOf(source: string): Set<number> {
  const ports = new Set<number>();
  for (const [literal] of source.matchAll(/\b19\d{3}\b/g)) ports.add(Number(literal));
  for (const [, brokers, port] of source.matchAll(/brokers: (\d+), port: (\d+)/g))
    for (let p = Number(port); p < Number(port) + 2 * Number(brokers); p += 1) ports.add(p);
  return ports;
}

describe('slow test files', () => {
  it('a cluster takes two ports a broker', () => {
    expect([...portsOf("{ name: 'c', brokers: 2, port: 19300 }")]).toEqual([19300, 19301, 19302, 19303]);
  });

  it('use ports no other slow file uses', () => {
    const files = readdirSync('test', { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith('.slow.test.ts'),
    );
    const owner = new Map<number, string>();
    const shared: string[] = [];
    for (const file of files) {
      for (const port of portsOf(readFileSync(join('test', file), 'utf8'))) {
        const other = owner.get(port);
        if (other !== undefined) shared.push(`${port}: ${other} and ${file}`);
        else owner.set(port, file);
      }
    }
    expect(files.length).toBeGreaterThan(30);
    expect(shared).toEqual([]);
  });
});
