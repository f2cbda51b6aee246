/**
 * The last-position-logits edit and EditableModel.tryEdit without a real model: a small
 * hand-built ONNX graph (an "LM head" MatMul over [batch, seq, hidden]) run by onnxruntime-node.
 */
import { fileURLToPath } from 'node:url';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { lastPositionLogits } from '../../policies/onnx/last-logits-graph.js';
import { EditableModel } from '../../policies/onnx/onnx-graph.js';

const ModelProto = protobuf
  .loadSync(fileURLToPath(new URL('../../policies/onnx/onnx.proto', import.meta.url)))
  .lookupType('onnx.ModelProto');

const FLOAT = 1;
const seqType = (last: number) => ({
  tensorType: {
    elemType: FLOAT,
    shape: { dim: [{ dimParam: 'batch' }, { dimParam: 'sequence' }, { dimValue: last }] },
  },
});

/** hidden [b, s, 2] → Relu → `head`(·, W [2, 3]) → logits [b, s, 3]. */
function toyLm(head = 'MatMul'): Uint8Array {
  const model = {
    irVersion: 8,
    opsetImport: [{ domain: '', version: 17 }],
    graph: {
      name: 'toy-lm',
      node: [
        { opType: 'Relu', input: ['hidden'], output: ['normed'] },
        { opType: head, input: ['normed', 'W'], output: ['logits'] },
      ],
      initializer: [{ name: 'W', dataType: FLOAT, dims: [2, 3], floatData: [1, 2, 3, -1, 0.5, 4] }],
      input: [{ name: 'hidden', type: seqType(2) }],
      output: [{ name: 'logits', type: seqType(3) }],
    },
  };
  return ModelProto.encode(ModelProto.fromObject(model)).finish();
}

const edited = (bytes: Uint8Array) => {
  const model = EditableModel.decode(bytes);
  lastPositionLogits(model.graph);
  return model.encode();
};

describe('lastPositionLogits', () => {
  it("returns each row's last-position logits of the graph as exported, for any sequence length", async () => {
    const exported = await InferenceSession.create(toyLm());
    const last = await InferenceSession.create(edited(toyLm()));
    for (const seq of [1, 4]) {
      const hidden = new Tensor(
        'float32',
        Float32Array.from({ length: 2 * seq * 2 }, (_, i) => (i % 5) - 1.5),
        [2, seq, 2],
      );
      const all = (await exported.run({ hidden })).logits as Tensor;
      const mine = (await last.run({ hidden })).logits as Tensor;
      expect(mine.dims).toEqual([2, 1, 3]);
      const data = all.data as Float32Array;
      const lastRows = [0, 1].flatMap((b) => [
        ...data.subarray((b * seq + seq - 1) * 3, (b * seq + seq) * 3),
      ]);
      expect(Array.from(mine.data as Float32Array)).toEqual(lastRows);
    }
  });

  it('refuses logits that do not come from a MatMul, naming the node', () => {
    expect(() => edited(toyLm('Add'))).toThrow(/logits comes from a Add node/);
  });
});

describe('EditableModel.tryEdit', () => {
  it('puts the graph back as it was when an edit fails half way, and returns the reason', () => {
    const model = EditableModel.decode(toyLm('Add'));
    const before = Buffer.from(model.encode());
    const reason = model.tryEdit((graph) => {
      graph.initializer.push({ name: 'half-way' });
      (graph.node[0] as { input: string[] }).input = ['renamed'];
      lastPositionLogits(graph); // throws: logits come from Add
    });
    expect(reason).toMatch(/expected the LM head's MatMul/);
    expect(Buffer.from(model.encode()).equals(before)).toBe(true);
    expect(model.tryEdit(() => {})).toBeUndefined();
  });
});
