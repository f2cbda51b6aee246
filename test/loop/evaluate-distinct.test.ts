import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { evaluateDistinct, type LoopEvaluation } from '../../loop/evaluate.js';

/** An artifact folder `v<version>` holding `model` as its model.onnx, with a matching manifest. */
function artifact(root: string, version: number, model: string, sha256?: string): string {
  const folder = join(root, `v${String(version).padStart(6, '0')}`);
  mkdirSync(folder, { recursive: true });
  writeFileSync(join(folder, 'model.onnx'), model);
  const manifest = {
    version,
    format: 'onnx',
    sha256: sha256 ?? createHash('sha256').update(model).digest('hex'),
    ...{ num_layers: 1, num_key_value_heads: 1, head_dim: 1, vocab_size: 4, inputs: [], outputs: [] },
  };
  writeFileSync(join(folder, 'manifest.json'), JSON.stringify(manifest));
  return folder;
}

/** A stand-in evaluation that records which versions it was asked for. */
function recordingEvaluator() {
  const evaluated: number[] = [];
  const evaluateOne = async (version: number, folder: string): Promise<LoopEvaluation> => {
    evaluated.push(version);
    const pass1 = version / 100;
    return {
      ...{ env: 'sokoban', policy: `onnx:v${version}`, policyVersion: version, k: 4, groups: 2, passes: 1 },
      ...{ pass1, pass1StdErr: 0.01, passK: pass1, passKStdErr: 0.01, perGroup: [pass1, pass1] },
      command: `spa eval --policy onnx:${folder} --seed 11`,
    } as unknown as LoopEvaluation;
  };
  return { evaluated, evaluateOne };
}

describe('evaluateDistinct', () => {
  it('evaluates each distinct model once and gives a repeated model its result under its own name', async () => {
    const root = mkdtempSync(join(tmpdir(), 'spa-eval-distinct-'));
    const artifacts = new Map([
      [1, artifact(root, 1, 'start')],
      [11, artifact(root, 11, 'start')], // a control arm's later version: the same bytes
      [21, artifact(root, 21, 'moved')],
      [31, artifact(root, 31, 'start')],
    ]);
    const { evaluated, evaluateOne } = recordingEvaluator();
    const results = await evaluateDistinct(artifacts, evaluateOne);
    expect(evaluated).toEqual([1, 21]);
    expect(results.map((r) => [r.policyVersion, r.policy, r.pass1])).toEqual([
      [1, 'onnx:v1', 0.01],
      [11, 'onnx:v000011', 0.01],
      [21, 'onnx:v21', 0.21],
      [31, 'onnx:v000031', 0.01],
    ]);
    expect(results[1]!.command).toBe(`spa eval --policy onnx:${artifacts.get(11)} --seed 11`);
  });

  it('refuses a model file that does not match its manifest instead of reusing a result for it', async () => {
    const root = mkdtempSync(join(tmpdir(), 'spa-eval-distinct-'));
    const start = createHash('sha256').update('start').digest('hex');
    const artifacts = new Map([
      [1, artifact(root, 1, 'start')],
      [2, artifact(root, 2, 'corrupt', start)], // claims the start's digest
    ]);
    await expect(evaluateDistinct(artifacts, recordingEvaluator().evaluateOne)).rejects.toThrow(
      /v000002\/model\.onnx: sha256 [0-9a-f]{64} does not match manifest\.json's/,
    );
  });
});
