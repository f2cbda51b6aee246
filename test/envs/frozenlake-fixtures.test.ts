import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FrozenLakeEnv } from '../../envs/frozenlake/frozenlake-env.js';
import { isGoalReachable, lakeDesc } from '../../envs/frozenlake/lake-map.js';

interface LakePuzzle {
  seed: number;
  split: string;
  render: string;
  desc: string[];
}

const puzzles = readFileSync(new URL('../../envs/puzzles/frozenlake-4x4.jsonl', import.meta.url), 'utf8')
  .split('\n')
  .filter((line) => line.trim().length > 0)
  .map((line) => JSON.parse(line) as LakePuzzle);

describe('FrozenLake reference puzzles (docs/spa-testvectors.md#puzzles, envs/puzzles/frozenlake-4x4.jsonl)', () => {
  it('holds the 384 seeds 123..250 then 10000..10255', () => {
    expect(puzzles).toHaveLength(384);
    expect(puzzles[0]?.seed).toBe(123);
    expect(puzzles[128]?.seed).toBe(10000);
  });

  // docs/spa-testvectors.md#puzzles table, seed → desc → render (rows joined by '/').
  const table: [number, string, string][] = [
    [10000, 'FFFF/FFFF/FFFH/GSFF', '____/____/___O/GP__'],
    [10001, 'FGFF/FFFH/SFHF/HFFF', '_G__/___O/P_O_/O___'],
    [10002, 'FSFF/GHFF/FFHF/HHFF', '_P__/GO__/__O_/OO__'],
    [10003, 'FFHF/FFFF/SGFF/FFFF', '__O_/____/PG__/____'],
    [10004, 'HFFG/FFFS/FFFF/FHFF', 'O__G/___P/____/_O__'],
    [123, 'FFFF/FHHS/GHFF/HFFF', '____/_OOP/GO__/O___'],
    [124, 'HFFG/FHFF/FFFF/FHFS', 'O__G/_O__/____/_O_P'],
    [125, 'HFFF/FFFH/GFFF/FSFF', 'O___/___O/G___/_P__'],
    [126, 'FHFH/FFHH/SFGF/FFFF', '_O_O/__OO/P_G_/____'],
    [127, 'FFFH/FFSH/FFHF/HGHF', '___O/__PO/__O_/OGO_'],
  ];
  it.each(table)('seed %i: desc %s renders as %s and matches the file', (seed, desc, render) => {
    const env = FrozenLakeEnv.fromDesc(desc.split('/'));
    expect(env.render()).toBe(render.split('/').join('\n'));
    const line = puzzles.find((p) => p.seed === seed);
    expect(line?.desc.join('/')).toBe(desc);
    expect(line?.render).toBe(env.render());
  });

  it('renders every file desc exactly as the file render, and fromRender restores the map', () => {
    for (const puzzle of puzzles) {
      const env = FrozenLakeEnv.fromDesc(puzzle.desc);
      expect(env.render(), `seed ${puzzle.seed}`).toBe(puzzle.render);
      expect(isGoalReachable(env.map), `seed ${puzzle.seed}`).toBe(true);
      const restored = FrozenLakeEnv.fromRender(puzzle.render);
      expect(lakeDesc(restored.map), `seed ${puzzle.seed}`).toEqual(puzzle.desc);
      expect(restored.describe()).toBe(env.describe());
    }
  });
});
