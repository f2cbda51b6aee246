/**
 * The docs name files that exist. README.md, docs/*.md and the READMEs of the folders name
 * repository paths in backticks (`streams/episodes/shard.ts`, `policies/onnx/`, `spa_trainer/sft/`
 * beside trainer/README.md), source files by name (`shard.ts`), trainer modules by their Python
 * name (`spa_trainer.ppo_service`) and other READMEs' sections (`infra/kafka/README.md#throughput`).
 * When a file moves or a section is renamed, this suite names every doc line that still points at
 * the old place. docs/experiments/ is exempt: a dated history names the files of its day.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { basename, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Docs with paths of their day, not of today. */
const HISTORY = /^docs\/experiments\//;
/** A backticked span. */
const SPAN = /`([^`\n]+)`/g;
/** A path with at least one folder, optionally `../`-relative, `#anchor` or `:line` after it. */
const FOLDER_PATH = /^((?:\.\.\/)*[\w.@-]+(?:\/[\w.@-]+)*\/?)(?:#([\w-]+)|:\d+)?$/;
/** A TypeScript or JavaScript source named without its folder. */
const SOURCE_NAME = /^[\w.-]+\.(?:ts|mts|cjs|mjs)$/;
/** A Python file named without its folder (checked in the trainer's own docs only). */
const PYTHON_NAME = /^\w+\.py$/;
/** Where the trainer's docs name modules from (`cli/settings.py`). */
const PYTHON_PACKAGE = 'trainer/spa_trainer';
/** A trainer module by its Python name, anywhere in a span (`python -m spa_trainer.sft …`). */
const TRAINER_MODULE = /\bspa_trainer(?:\.\w+)+/g;

interface Doc {
  readonly path: string;
  readonly text: string;
}

/** Tracked files present in the working tree, and every folder above them. */
function repositoryTree(): { files: Set<string>; folders: Set<string> } {
  const listing = execFileSync('git', ['ls-files', '-z'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  const files = new Set(listing.split('\0').filter((p) => p !== '' && existsSync(join(ROOT, p))));
  const folders = new Set<string>();
  for (const file of files) {
    for (let dir = posix.dirname(file); dir !== '.'; dir = posix.dirname(dir)) folders.add(dir);
  }
  return { files, folders };
}

/**
 * Paths .gitignore covers (runs/, trainer/.venv, infra/kafka/data/): made by a run, not tracked.
 * Each is asked as a file and as a folder, since a pattern like `.venv/` matches folders only.
 */
function ignoredOf(paths: readonly string[]): Set<string> {
  if (paths.length === 0) return new Set();
  try {
    const out = execFileSync('git', ['check-ignore', '--no-index', '--stdin'], {
      cwd: ROOT,
      encoding: 'utf8',
      input: paths.flatMap((p) => [p, `${p}/`]).join('\n'),
    });
    return new Set(out.split('\n').map((p) => p.replace(/\/$/, '')));
  } catch {
    return new Set(); // exit 1: none is ignored
  }
}

/** GitHub's anchor of a heading (lower case, punctuation dropped, spaces to dashes), or its `{#anchor}`. */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  for (const [, title] of markdown.matchAll(/^#{1,6} (.+)$/gm)) {
    const explicit = /\{#([\w-]+)\}\s*$/.exec(title!);
    if (explicit) anchors.add(explicit[1]!);
    const plain = title!.replace(/\{#[\w-]+\}\s*$/, '').trim();
    anchors.add(
      plain
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    );
  }
  return anchors;
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

describe('paths named in the docs exist', () => {
  const { files, folders } = repositoryTree();
  const exists = (path: string): boolean => files.has(path) || folders.has(path);
  const topLevel = new Set([...files, ...folders].filter((p) => !p.includes('/')));
  const names = new Set([...files].map((f) => basename(f)));
  const docs: Doc[] = [...files]
    .filter((p) => p.endsWith('.md') && !HISTORY.test(p))
    .map((path) => ({ path, text: readFileSync(join(ROOT, path), 'utf8') }));

  /** Where a span may point, from the doc's folder first; none when it is no repository path. */
  function candidates(doc: string, path: string): string[] {
    const fromRoot = path.replace(/\/$/, '');
    const inDir = (dir: string): string | null => {
      const joined = posix.normalize(posix.join(dir, fromRoot));
      return exists(`${dir}/${fromRoot.split('/')[0]}`) ? joined : null;
    };
    const dir = posix.dirname(doc);
    if (path.startsWith('../')) return [posix.normalize(posix.join(dir, fromRoot))];
    // From the doc's folder; the trainer's docs also name modules inside the package.
    const bases = dir === '.' ? [] : [dir, ...(doc.startsWith('trainer/') ? [PYTHON_PACKAGE] : [])];
    const out = bases.map(inDir).filter((p) => p !== null);
    if (topLevel.has(fromRoot.split('/')[0]!)) out.push(fromRoot);
    return out;
  }

  /** A `spa_trainer.a.b` name: a module or package, or a name its parent module's file holds. */
  function moduleExists(name: string): boolean {
    const parts = name.split('.');
    const asModule = (p: string[]): string | null => {
      const base = `trainer/${p.join('/')}`;
      return [`${base}.py`, `${base}/__init__.py`].find((f) => files.has(f)) ?? null;
    };
    if (asModule(parts) !== null) return true;
    const parent = asModule(parts.slice(0, -1));
    if (parent === null || parts.length < 3) return false;
    return new RegExp(`\\b${parts.at(-1)!}\\b`).test(readFileSync(join(ROOT, parent), 'utf8'));
  }

  it('finds the docs and the paths in them', () => {
    expect(docs.some((d) => d.path === 'docs/architecture.md')).toBe(true);
    expect(docs.some((d) => d.path === 'trainer/README.md')).toBe(true);
    expect(candidates('README.md', 'streams/episodes/shard.ts')).toEqual(['streams/episodes/shard.ts']);
    expect(exists('streams/episodes/shard.ts') && !exists('streams/policies/onnx')).toBe(true);
  });

  it('every backticked repository path, source name and trainer module exists', () => {
    const missing: { where: string; path: string }[] = [];
    let checked = 0;
    for (const { path: doc, text } of docs) {
      for (const match of text.matchAll(SPAN)) {
        const span = match[1]!.trim();
        const where = `${doc}:${lineOf(text, match.index)}`;
        for (const [module] of span.matchAll(TRAINER_MODULE)) {
          checked++;
          if (!moduleExists(module)) missing.push({ where, path: module });
        }
        const folderPath = FOLDER_PATH.exec(span);
        if (folderPath && folderPath[1]!.includes('/')) {
          const places = candidates(doc, folderPath[1]!);
          if (places.length === 0) continue;
          checked++;
          if (!places.some(exists)) missing.push({ where, path: places.at(-1)! });
        } else if (SOURCE_NAME.test(span) || (PYTHON_NAME.test(span) && doc.startsWith('trainer/'))) {
          checked++;
          if (!names.has(span)) missing.push({ where, path: span });
        }
      }
    }
    const ignored = ignoredOf(missing.map((m) => m.path));
    expect(checked).toBeGreaterThan(200);
    expect(
      missing.filter((m) => !ignored.has(m.path)).map((m) => `${m.where}: ${m.path}`),
      'a doc names a path that does not exist: fix the doc (or move the history to docs/experiments/)',
    ).toEqual([]);
  });

  it('every <folder>/README.md#anchor cited in docs and code names one of its headings', () => {
    const broken: string[] = [];
    const cite = /(?<![\w/.-])((?:\.\.\/)*(?:[\w.-]+\/)*README\.md)#([\w-]+)/g;
    for (const path of files) {
      if (HISTORY.test(path) || !/\.(md|ts|py|cjs|mjs|js)$/.test(path)) continue;
      const text = readFileSync(join(ROOT, path), 'utf8');
      for (const match of text.matchAll(cite)) {
        const [cited, readme, anchor] = match;
        const local = posix.normalize(posix.join(posix.dirname(path), readme!));
        const target = [local, readme!].find((p) => files.has(p));
        const where = `${path}:${lineOf(text, match.index)}: ${cited}`;
        if (target === undefined) broken.push(`${where} (no such file)`);
        else if (!headingAnchors(readFileSync(join(ROOT, target), 'utf8')).has(anchor!)) {
          broken.push(`${where} (${target} has no such heading)`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});
