import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { SftRow, Trajectory } from '../../schemas/index.js';

/**
 * `spa generate --policy random` checked by an independent process: every turn of every raw
 * trajectory is replayed through `spa env step` (the state shown to the model + the actions the
 * episode executed), and the SFT rows' ground-truth observation/prediction must equal what
 * `spa env step` reports. Sokoban and Sudoku are deterministic; FrozenLake's slips are drawn from
 * the episode's own RNG, which a separate process cannot replay, so it is covered by the
 * in-process invariants (test/streams/generator-pipeline.test.ts).
 */
const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

function spa(args: readonly string[], input?: string): string {
  const run = spawnSync(process.execPath, ['bin/spa.mjs', ...args], {
    cwd: repoRoot,
    input,
    encoding: 'utf8',
    maxBuffer: 256 << 20,
  });
  if (run.status !== 0) throw new Error(`spa ${args.join(' ')} failed: ${run.stderr}`);
  return run.stdout;
}

const jsonLines = <T>(text: string): T[] =>
  text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as T);

/** Grid part and coordinate sentence of a `text_with_coordinates` state. */
function splitState(state: string): { render: string; description: string } {
  const cut = state.lastIndexOf('\n');
  return { render: state.slice(0, cut), description: state.slice(cut + 1) };
}

describe.each(['sokoban', 'sudoku'] as const)(
  'spa generate --policy random (%s) against spa env step',
  (env) => {
    it('annotates every turn with the states spa env step computes', () => {
      const dir = mkdtempSync(join(tmpdir(), 'spa-gen-'));
      const out = join(dir, 'sft.jsonl');
      spa([
        'generate',
        '--env',
        env,
        '--policy',
        'random',
        '--groups',
        '6',
        '--group-size',
        '2',
        '--batches',
        '2',
        '--puzzles',
        'spa',
        '--out',
        out,
        '--run-id',
        't',
      ]);
      const trajectories = jsonLines<Trajectory>(readFileSync(join(dir, 'sft.trajectories.jsonl'), 'utf8'));
      const rows = jsonLines<SftRow>(readFileSync(out, 'utf8'));
      expect(trajectories).toHaveLength(24);

      const puzzleOf = (t: Trajectory) => splitState(t.states[0]!).render;
      const inputs = trajectories.flatMap((t) =>
        t.turns.map((turn) => ({
          env,
          render: splitState(turn.state).render,
          actions: turn.executed,
          ...(env === 'sudoku' ? { puzzle: puzzleOf(t) } : {}),
        })),
      );
      const outputs = jsonLines<{ renders: string[]; description: string; error?: string }>(
        spa(['env', 'step'], inputs.map((i) => JSON.stringify(i)).join('\n') + '\n'),
      );
      expect(outputs.filter((o) => o.error)).toEqual([]);

      let k = 0;
      let checked = 0;
      for (const t of trajectories) {
        const tRows = rows.filter((r) => r.trajectory_id === t.trajectory_id).sort((a, b) => a.turn - b.turn);
        t.turns.forEach((turn, i) => {
          const stepped = outputs[k++]!;
          const after = `${stepped.renders.at(-1) ?? splitState(turn.state).render}\n${stepped.description}`;
          expect(after, `${t.trajectory_id} turn ${i}`).toBe(t.states[i + 1]);
          const row = tRows[i];
          if (!row) return; // filtered trajectory: no rows
          expect(/<observation>(.*?)<\/observation>/s.exec(row.response)?.[1]).toBe(turn.state);
          expect(/<prediction>(.*?)<\/prediction>/s.exec(row.response)?.[1]).toBe(after);
          checked++;
        });
      }
      expect(checked).toBeGreaterThan(24);
    });
  },
);
