/**
 * Issue 43 item 3: no silent phase over 10 s. An evaluation's meter (loop/evaluate.ts, `spa eval`)
 * prints its counts and the time left at least every 10 s, also while episodes come slowly.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Progress } from '../../loop/progress.js';

describe("an evaluation's progress", () => {
  let lines: string[];
  beforeEach(() => {
    vi.useFakeTimers({ now: 0 });
    lines = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      lines.push(String(chunk));
      return true;
    });
    Object.defineProperty(process.stderr, 'isTTY', { value: false, configurable: true });
  });
  afterEach(() => {
    vi.restoreAllMocks();
    vi.useRealTimers();
  });

  it('prints a line every 10 s while no episode finishes, with the count and the time left', () => {
    const progress = new Progress('eval v1', { key: 'episodes', value: 512 });
    vi.advanceTimersByTime(2000);
    for (let i = 0; i < 128; i++) progress.add('episodes'); // the first prints at once
    // one episode after the policy's load: no time left yet (it read "about 1022s left")
    expect(lines).toEqual(['[eval v1] episodes 1/512 (0.5/s)  2.0s\n']);
    vi.advanceTimersByTime(9000);
    expect(lines).toHaveLength(1); // 9 s after the last line
    vi.advanceTimersByTime(1000);
    // timed from the first episode: 127 more in 10 s, 384 to go
    expect(lines.at(-1)).toBe('[eval v1] episodes 128/512 (10.7/s)  12.0s, about 30s left\n');
    vi.advanceTimersByTime(10_000);
    expect(lines).toHaveLength(3);
    progress.done();
    expect(lines.at(-1)).toBe('[eval v1] episodes 128/512 (5.8/s)  22.0s, about 60s left\n');
    vi.advanceTimersByTime(60_000);
    expect(lines).toHaveLength(4); // none after done()
  });
});
