/**
 * Citations stay inside the repository. Code and notes cite the project's own notes as
 * `docs/<file>.md#<anchor>`; a clone has nothing else to follow. This suite fails when a tracked
 * file points at a document outside the repository (the SPA reference and test-case files, the
 * design and style notes, issue numbers), or when a `docs/…md#anchor` citation names a missing
 * file or an anchor that no `## Title {#anchor}` heading of that file defines.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const THIS_FILE = 'test/docs/citations.test.ts';

/**
 * Citations of documents a clone does not have. Spelled with escapes (`\u00a7` is the section
 * sign) so that this file does not match its own patterns.
 */
const OUTSIDE_CITATIONS: readonly RegExp[] = [
  /reference \u00a7/i,
  /testcases \u00a7/i,
  /design\.md/,
  /style\.md/,
  /issue ite[m] \d/i,
  /spa-referenc[e]/,
  /spa-testcase[s]/,
  /\.\.\/share[d]/,
];

/** `docs/<file>.md`, optionally `#<anchor>`, also behind `../` (trainer/README.md cites `../docs/…`). */
const DOC_CITATION = /(?<![\w/.-])(?:\.\.\/)*docs\/([\w.-]+\.md)(?:#([\w-]+))?/g;
/** Further anchors of the same file right after a citation: `…md#<a>, #<b>` or `#<a>; #<b>`. */
const MORE_ANCHORS = /^(?:\s*[,;]\s*(?:and\s+)?#([\w-]+))+/;
/** An anchor a heading defines: `## Title {#anchor}`. */
const HEADING_ANCHOR = /^#{1,6} .*\{#([\w-]+)\}\s*$/gm;
/** Within a docs note, a reference to one of its own sections written as `` `#anchor` ``. */
const OWN_ANCHOR = /`#([a-z][\w-]*)`/g;

interface TextFile {
  readonly path: string;
  readonly text: string;
}

/** Every tracked file that exists in the working tree and is text (no NUL byte). */
function trackedTextFiles(): TextFile[] {
  const listing = execFileSync('git', ['ls-files', '-z'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  return listing
    .split('\0')
    .filter((path) => path !== '' && existsSync(join(ROOT, path)))
    .flatMap((path) => {
      const bytes = readFileSync(join(ROOT, path));
      return bytes.includes(0) ? [] : [{ path, text: bytes.toString('utf8') }];
    });
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

function anchorsOf(docText: string): Set<string> {
  return new Set([...docText.matchAll(HEADING_ANCHOR)].map((m) => m[1]!));
}

describe('citations stay inside the repository', () => {
  const files = trackedTextFiles();
  const anchorCache = new Map<string, Set<string> | null>();
  const docAnchors = (doc: string): Set<string> | null => {
    if (!anchorCache.has(doc)) {
      const path = join(ROOT, 'docs', doc);
      anchorCache.set(doc, existsSync(path) ? anchorsOf(readFileSync(path, 'utf8')) : null);
    }
    return anchorCache.get(doc)!;
  };

  it('lists the tracked files (git ls-files works here)', () => {
    expect(files.length).toBeGreaterThan(50);
    expect(files.some((f) => f.path === 'docs/spa-envs.md')).toBe(true);
  });

  it('no tracked file cites a document outside the repository', () => {
    const offenders: string[] = [];
    for (const { path, text } of files) {
      if (path === THIS_FILE) continue;
      text.split('\n').forEach((line, i) => {
        const hit = OUTSIDE_CITATIONS.find((pattern) => pattern.test(line));
        if (hit) offenders.push(`${path}:${i + 1}: ${line.trim()}`);
      });
    }
    expect(offenders, 'cite docs/<file>.md#<anchor> instead (and write the note if it is missing)').toEqual(
      [],
    );
  });

  it('every docs/<file>.md#<anchor> names an existing note and one of its {#anchor} headings', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const { path, text } of files) {
      for (const match of text.matchAll(DOC_CITATION)) {
        const [cited, doc, anchor] = match;
        const where = `${path}:${lineOf(text, match.index)}: ${cited}`;
        const anchors = docAnchors(doc!);
        if (anchors === null) {
          broken.push(`${where} (no such file docs/${doc})`);
          continue;
        }
        const more = MORE_ANCHORS.exec(text.slice(match.index + cited.length));
        const named = [
          ...(anchor === undefined ? [] : [anchor]),
          ...(more === null ? [] : [...more[0].matchAll(/#([\w-]+)/g)].map((m) => m[1]!)),
        ];
        for (const name of named) {
          checked++;
          if (!anchors.has(name)) broken.push(`${where} (docs/${doc} has no {#${name}} heading)`);
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(broken).toEqual([]);
  });

  it('a note referring to its own sections as `#anchor` names one of its headings', () => {
    const broken: string[] = [];
    for (const { path, text } of files) {
      if (!/^docs\/[^/]+\.md$/.test(path)) continue;
      const anchors = anchorsOf(text);
      for (const match of text.matchAll(OWN_ANCHOR)) {
        if (!anchors.has(match[1]!)) broken.push(`${path}:${lineOf(text, match.index)}: ${match[0]}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
