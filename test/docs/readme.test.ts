/**
 * README.md stays a short front page whose index reaches every note: at most 150 lines, and every
 * docs/*.md named in it, so a new note cannot be written where no one finds it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

describe('README.md', () => {
  it('is at most 150 lines', () => {
    expect(README.trimEnd().split('\n').length).toBeLessThanOrEqual(150);
  });

  it('names every note in docs/ (its docs index)', () => {
    const notes = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md'));
    expect(notes.length).toBeGreaterThan(10);
    expect(notes.filter((note) => !README.includes(`docs/${note}`))).toEqual([]);
    expect(README).toContain('`docs/experiments/`');
  });
});
