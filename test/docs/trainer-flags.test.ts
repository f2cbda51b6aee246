/**
 * The trainer commands the docs show take the flags they show. Every `python -m spa_trainer.sft …`
 * or `torchrun … -m spa_trainer.ppo_service …` command in README.md, docs/*.md and the folders'
 * READMEs (a code-block line with its `\` continuations, or a backticked span), and every flag
 * row of trainer/README.md's SFT and PPO sections, must name flags of
 * schemas/trainer-settings.json, the schema the trainer's config dataclasses generate. A renamed
 * setting then fails here until the docs follow.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface SettingsSchema {
  readonly $defs: Record<
    string,
    { readonly title: string; readonly properties: Record<string, { 'x-flag'?: string }> }
  >;
}

/** Command module (`spa_trainer.sft`) → its flags, from the schema's `python -m <module>` titles. */
function flagsByModule(): Map<string, Set<string>> {
  const schema = JSON.parse(
    readFileSync(join(ROOT, 'schemas/trainer-settings.json'), 'utf8'),
  ) as SettingsSchema;
  const flags = new Map<string, Set<string>>();
  for (const def of Object.values(schema.$defs)) {
    const module = /-m (spa_trainer(?:\.\w+)+)/.exec(def.title)?.[1];
    if (module === undefined) continue;
    const own = Object.values(def.properties).flatMap((p) =>
      p['x-flag'] === undefined ? [] : [p['x-flag']],
    );
    flags.set(module, new Set(own));
  }
  return flags;
}

/** Docs that are references (docs/experiments/ keeps the commands of its day). */
function referenceDocs(): { path: string; text: string }[] {
  const listing = execFileSync('git', ['ls-files', '-z', '*.md'], { cwd: ROOT, encoding: 'utf8' });
  return listing
    .split('\0')
    .filter((p) => p !== '' && !p.startsWith('docs/experiments/') && existsSync(join(ROOT, p)))
    .map((path) => ({ path, text: readFileSync(join(ROOT, path), 'utf8') }));
}

/** Each trainer command line of a doc (continuations joined), with the line it starts on. */
function commands(text: string): { line: number; module: string; command: string }[] {
  const out: { line: number; module: string; command: string }[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    let command = lines[i]!;
    const start = i;
    while (command.endsWith('\\') && i + 1 < lines.length) command = command.slice(0, -1) + lines[++i];
    const pieces = [...command.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    for (const piece of pieces.length > 0 ? pieces : [command]) {
      // Only what follows the module is its flags (torchrun's own come before).
      const call = /-m (spa_trainer\.\w+)/.exec(piece);
      if (call) out.push({ line: start + 1, module: call[1]!, command: piece.slice(call.index) });
    }
  }
  return out;
}

/** The flags of the table rows (`| \`--flag …\``) in a section of trainer/README.md. */
function tableFlags(readme: string, heading: string): string[] {
  const section = readme.split(/^## /m).find((s) => s.startsWith(heading)) ?? '';
  return [...section.matchAll(/^\| `([^`]+)`/gm)].flatMap((m) =>
    [...m[1]!.matchAll(/--[a-z][\w-]*/g)].map((f) => f[0]),
  );
}

describe('trainer flags in the docs', () => {
  const flags = flagsByModule();

  it('reads the settings schema of both commands', () => {
    expect(flags.get('spa_trainer.sft')?.has('--batch-size')).toBe(true);
    expect(flags.get('spa_trainer.ppo_service')?.has('--export-every')).toBe(true);
  });

  it('every flag of a spa_trainer command shown in the docs exists', () => {
    const unknown: string[] = [];
    let checked = 0;
    for (const { path, text } of referenceDocs()) {
      for (const { line, module, command } of commands(text)) {
        const known = flags.get(module);
        if (known === undefined) continue; // spa_trainer.export: not a settings dataclass
        for (const [flag] of command.matchAll(/(?<=\s)--[a-z][\w-]*/g)) {
          checked++;
          if (!known.has(flag) && flag !== '--help') unknown.push(`${path}:${line}: ${module} ${flag}`);
        }
      }
    }
    expect(checked).toBeGreaterThan(10);
    expect(unknown).toEqual([]);
  });

  it("trainer/README.md's flag tables name flags of their command", () => {
    const readme = readFileSync(join(ROOT, 'trainer/README.md'), 'utf8');
    const sft = tableFlags(readme, 'SFT');
    expect(sft.length).toBeGreaterThan(5);
    expect(sft.filter((f) => !flags.get('spa_trainer.sft')!.has(f))).toEqual([]);
  });
});
