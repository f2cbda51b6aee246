/**
 * docs/architecture.md matches the code. Its pipeline diagram names stages (`toTrajectory`,
 * `episodes(…)`), topics (`spa.<run>.sft`) and trainer modules (`spa_trainer.export`); its rooms
 * table names each folder with what it may import. This suite fails when a stage is no exported
 * name of operators/, policies/ or streams/, a topic role or module does not exist, or the table
 * and the import rules of .dependency-cruiser.cjs disagree.
 */
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spaTopicNames } from '../../schemas/topics.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOC = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
/** Folders whose exported names the diagram may use as stages. */
const STAGE_FOLDERS = ['operators', 'policies', 'streams'];

/** The section `## <title> {#<anchor>}`. */
function section(anchor: string): string {
  const found = DOC.split(/^## /m).find((s) => s.split('\n')[0]!.endsWith(`{#${anchor}}`));
  if (found === undefined) throw new Error(`docs/architecture.md: no section {#${anchor}}`);
  return found;
}

/** The first code block of a section. */
function codeBlockUnder(anchor: string): string {
  const block = /^```\n([\s\S]*?)^```$/m.exec(section(anchor));
  if (block === null) throw new Error(`docs/architecture.md: no code block under {#${anchor}}`);
  return block[1]!;
}

/** Names a diagram uses as stages: camelCase or PascalCase identifiers, and `name(` calls. */
function stageNames(diagram: string): Set<string> {
  const names = new Set<string>();
  for (const [name] of diagram.matchAll(/\b[A-Za-z][a-z0-9]+[A-Z]\w*\b/g)) names.add(name);
  for (const [, name] of diagram.matchAll(/\b([a-z]\w*)\(/g)) names.add(name!);
  return names;
}

/** Every name exported by a .ts file under the stage folders. */
function exportedNames(): Set<string> {
  const names = new Set<string>();
  const visit = (dir: string): void => {
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory()) visit(path);
      else if (entry.name.endsWith('.ts')) {
        const text = readFileSync(join(ROOT, path), 'utf8');
        const exported = /^export (?:async )?(?:function|const|class|interface|type|let) (\w+)/gm;
        for (const [, name] of text.matchAll(exported)) names.add(name!);
        for (const [, list] of text.matchAll(/^export \{([^}]*)\}/gm)) {
          for (const item of list!.split(','))
            names.add(
              item
                .trim()
                .split(/\s+as\s+/)
                .at(-1)!,
            );
        }
      }
    }
  };
  STAGE_FOLDERS.forEach(visit);
  return names;
}

/** Layer → the layers it may import, read from the names of the import rules. */
function enforcedLayers(): Map<string, string[]> {
  const require = createRequire(import.meta.url);
  const rules = (require(join(ROOT, '.dependency-cruiser.cjs')) as { forbidden: { name: string }[] })
    .forbidden;
  const layers = new Map<string, string[]>();
  for (const { name } of rules) {
    const only = /^(\w+)-imports-only-([\w-]+)$/.exec(name);
    if (only) layers.set(only[1]!, only[2]!.split('-'));
    const none = /^(\w+)-imports-no-other-folder$/.exec(name);
    if (none) layers.set(none[1]!, []);
  }
  return layers;
}

/** The streams/ subfolders lowest first, from the rule `streams-<lowest>-below-<the rest>`. */
function enforcedStreamsOrder(): string[] {
  const require = createRequire(import.meta.url);
  const rules = (require(join(ROOT, '.dependency-cruiser.cjs')) as { forbidden: { name: string }[] })
    .forbidden;
  const orders = rules
    .map(({ name }) => /^streams-(\w+)-below-([\w-]+)$/.exec(name))
    .filter((m) => m !== null)
    .map((m) => [m[1]!, ...m[2]!.split('-')]);
  return orders.reduce((longest, o) => (o.length > longest.length ? o : longest), [] as string[]);
}

/** Rows of the rooms table: folder (without the slash) → its `may import` cell. */
function roomsTable(): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of DOC.split('\n')) {
    const cells = /^\| `([\w-]+)\/` +\|.*\| ([^|]+?) +\|$/.exec(line);
    if (cells) rows.set(cells[1]!, cells[2]!);
  }
  return rows;
}

describe('docs/architecture.md matches the code', () => {
  const pipeline = codeBlockUnder('pipeline');

  it('every stage the pipeline diagram names is exported by operators/, policies/ or streams/', () => {
    const stages = [...stageNames(pipeline)];
    expect(stages).toEqual(
      expect.arrayContaining(['episodes', 'toTrajectory', 'annotateGroundTruth', 'toRollout']),
    );
    const exported = exportedNames();
    expect(stages.filter((name) => !exported.has(name))).toEqual([]);
  });

  it('every topic the diagram names is a topic role, every trainer module exists', () => {
    const roles = Object.keys(spaTopicNames());
    const topics = [...pipeline.matchAll(/spa\.<run>\.(\w+)/g)].map((m) => m[1]!);
    expect(topics.length).toBeGreaterThan(4);
    expect(topics.filter((t) => !roles.includes(t))).toEqual([]);
    const modules = [...pipeline.matchAll(/\bspa_trainer(?:\.\w+)+/g)].map((m) => m[0]);
    expect(modules.length).toBeGreaterThan(1);
    const missing = modules.filter((module) => {
      const base = join(ROOT, 'trainer', ...module.split('.'));
      return ![`${base}.py`, join(base, '__init__.py')].some(existsSync);
    });
    expect(missing).toEqual([]);
  });

  it('the rooms table lists every layer with the imports .dependency-cruiser.cjs allows it', () => {
    const layers = enforcedLayers();
    expect(layers.size).toBeGreaterThan(6);
    const table = roomsTable();
    for (const [layer, allowed] of layers) {
      const cell = table.get(layer);
      expect(cell, `docs/architecture.md has no row for \`${layer}/\``).toBeDefined();
      const listed = cell === 'nothing' ? [] : cell!.split(',').map((s) => s.trim());
      expect([...listed].sort(), `\`${layer}/\` may import`).toEqual([...allowed].sort());
    }
    for (const folder of table.keys()) expect(existsSync(join(ROOT, folder)), folder).toBe(true);
  });

  it('the streams/ order it shows is the enforced one', () => {
    const order = enforcedStreamsOrder();
    expect(order.length).toBeGreaterThan(3);
    expect(section('imports')).toContain(`streams/: ${order.join(' ◄─ ')}`);
  });
});
