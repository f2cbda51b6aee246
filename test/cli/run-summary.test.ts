import { describe, expect, it } from 'vitest';
import { floorLine, stageGainLines } from '../../cli/commands/run.js';
import type { EvaluationResult } from '../../streams/eval/evaluate.js';
import { passReport } from '../../streams/eval/pass-at-k.js';

/** An evaluation whose puzzle i is solved in `solved[i]` of its 4 episodes. */
const evaluation = (policy: string, version: number, solved: readonly number[]): EvaluationResult => ({
  ...passReport(
    solved.map((n, i) => ({
      groupId: `g${i}`,
      puzzle: `${123 + i}`,
      successes: [0, 1, 2, 3].map((j) => j < n),
    })),
  ),
  env: 'sokoban',
  policy,
  policyVersion: version,
});

describe("the run summary's verdict on the random floor", () => {
  it('pairs by puzzle: a one-episode gain on every puzzle beats a floor whose puzzles vary widely', () => {
    const floor = evaluation('random', 0, [0, 3, 0, 3, 0, 3]);
    const final = evaluation('onnx:v000003', 3, [1, 4, 1, 4, 0, 4]);
    // Unpaired, the gain (+20.8 points) is within √(SE² + SE²) ≈ 24.6 points.
    expect(final.pass1 - floor.pass1).toBeLessThan(Math.hypot(final.pass1StdErr, floor.pass1StdErr));
    expect(floorLine([floor, final])).toBe(
      '  final policy v3 beats the random floor (Pass@1 +20.8 ± 4.2, paired by puzzle)',
    );
  });

  it('says below and within two standard errors too', () => {
    const floor = evaluation('random', 0, [2, 2, 2, 2]);
    expect(floorLine([floor, evaluation('onnx', 2, [1, 1, 1, 2])])).toMatch(
      /v2 is below the random floor \(Pass@1 −18\.8/,
    );
    // above the floor by 1.7 standard errors, not 2
    expect(floorLine([floor, evaluation('onnx', 2, [2, 3, 3, 2])])).toMatch(
      /is within two standard errors of the random floor \(Pass@1 \+12\.5 ± 7\.2/,
    );
  });

  it('says what each stage added: every policy against the one before it, paired', () => {
    const at = (e: EvaluationResult, stage: string) => ({ ...e, command: '', stage });
    const floor = at(evaluation('random', 0, [2, 2, 2, 2]), 'random floor');
    const v0 = at(evaluation('onnx:v000000', 0, [2, 2, 3, 1]), 'self-play v0');
    const sft = at(evaluation('onnx:v000001', 1, [1, 2, 3, 0]), 'before PPO');
    const final = at(evaluation('onnx:v000004', 4, [2, 3, 3, 1]), 'after PPO');
    expect(stageGainLines([floor, v0, sft, final])).toEqual([
      '  world-model SFT v0 → v1: Pass@1 −12.5 ± 7.2 (paired by puzzle)',
      '  PPO          v1 → v4: Pass@1 +18.8 ± 6.3 (paired by puzzle)',
    ]);
    expect(stageGainLines([floor, final])).toEqual([]);
  });
});
