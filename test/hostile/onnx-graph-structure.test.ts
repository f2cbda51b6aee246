/**
 * The ONNX loader's structure check (policies/onnx/graph-structure.ts): an export that lacks the
 * generator's graph (split cache, last-position logits, grouped attention) is refused with what
 * it lacks and how to re-export, instead of running without them. What onnxruntime-node shows of
 * a session (input names, output metadata) is given here as data; the real loader on a real
 * artifact is in test/policies/onnx-policy.slow.test.ts.
 */
import type { InferenceSession } from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import type { PolicyManifest } from '../../policies/onnx/artifact.js';
import { checkStructure, missingStructure, type SessionView } from '../../policies/onnx/graph-structure.js';

const past = ['past_key_values.0.key', 'past_key_values.0.value'];
const recent = ['recent.0.key', 'recent.0.value'];
const base = ['input_ids', 'attention_mask', 'position_ids'];

const manifest = (fields: Partial<PolicyManifest>): PolicyManifest => ({
  version: 1,
  stage: 'sft',
  step: 0,
  model: 'tiny',
  format: 'onnx',
  sha256: '0'.repeat(64),
  file: 'model.onnx',
  num_layers: 1,
  num_key_value_heads: 2,
  head_dim: 16,
  vocab_size: 968,
  eos_token_id: 2,
  inputs: [...base, ...past, ...recent],
  outputs: ['logits', 'present.0.key', 'present.0.value'],
  graph: ['split_cache', 'last_position_logits', 'grouped_attention'],
  ...fields,
});

const logits = (shape: (number | string)[]): InferenceSession.ValueMetadata => ({
  name: 'logits',
  isTensor: true,
  type: 'float32',
  shape,
});

const session = (inputNames: string[], logitsShape: (number | string)[]): SessionView => ({
  inputNames,
  outputMetadata: [logits(logitsShape)],
});

const generator = session([...base, ...past, ...recent], ['batch', 1, 968]);

describe('the ONNX loader refuses a graph without the generator structure', () => {
  it('accepts the graph spa_trainer.export writes', () => {
    expect(missingStructure(manifest({}), generator)).toEqual([]);
    expect(() => checkStructure('v1/model.onnx', manifest({}), generator)).not.toThrow();
  });

  it('refuses an export from before (whole cache, every position, no graph list), saying how to re-export', () => {
    const old = manifest({ inputs: [...base, ...past], graph: undefined });
    const graph = session([...base, ...past], ['batch', 'sequence', 968]);
    expect(() => checkStructure('runs/a/policies/v000003/model.onnx', old, graph)).toThrow(
      new RegExp(
        '^runs/a/policies/v000003/model.onnx: exported without ' +
          'split_cache \\(the graph has no recent.\\* inputs\\), ' +
          'last_position_logits \\(logits is declared \\[batch, sequence, 968\\], not \\[batch, 1, vocab\\]\\), ' +
          `grouped_attention \\(manifest.json's "graph" does not list it\\); .*` +
          'Re-export the weights: trainer/.venv/bin/python -m spa_trainer.export --model ',
      ),
    );
  });

  it('names a single missing part: recent inputs gone from a graph whose manifest lists them', () => {
    const graph = session([...base, ...past], ['batch', 1, 968]);
    expect(missingStructure(manifest({}), graph)).toEqual(['split_cache (the graph has no recent.* inputs)']);
  });

  it('names logits declared over every position, or not declared at all', () => {
    expect(missingStructure(manifest({}), session([...base, ...past, ...recent], ['b', 's', 968]))).toEqual([
      'last_position_logits (logits is declared [b, s, 968], not [batch, 1, vocab])',
    ]);
    const none: SessionView = { inputNames: [...base, ...past, ...recent], outputMetadata: [] };
    expect(missingStructure(manifest({}), none)).toEqual([
      'last_position_logits (logits is declared [], not [batch, 1, vocab])',
    ]);
  });

  it('names a part the manifest leaves out (grouped attention is not visible from outside the graph)', () => {
    const partial = manifest({ graph: ['split_cache', 'last_position_logits'] });
    expect(missingStructure(partial, generator)).toEqual([
      `grouped_attention (manifest.json's "graph" does not list it)`,
    ]);
  });
});
