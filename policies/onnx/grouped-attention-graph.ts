/**
 * The "grouped attention" variant of an exported graph, built in memory when the session opens.
 * Why: a grouped-query-attention model (Qwen2: 8 query heads share 2 key/value heads in the bench's
 * 24.6 M model) is exported with HF's `repeat_kv`, `Unsqueeze(kv, 2) → Expand → Reshape`, which
 * copies the whole key and value cache `heads / kvHeads` times per layer on every call before the
 * two attention MatMuls read it. At batch 1 that copy and the wider reads were about a fifth of a
 * decoding step's CPU at 500 cached columns on the bench's 24.6 M model (8.8 → 7.0 ms a call,
 * README.md#speed-measured); Python onnxruntime runs the export with the copy too.
 *
 * The variant reads the cache once per key/value head instead: the query `[b, H, s, d]` is viewed
 * as `[b, kv, rep, s, d]` and multiplied by the unsqueezed key `[b, kv, 1, d, L]` (MatMul
 * broadcasts the `rep` axis without copying), and the same for the attention weights and the
 * value. Each head still multiplies an `s × d` by a `d × L` matrix, as before, so the logits are
 * the same bit for bit (checked by hand on the 24.6 M bench model; test/policies/onnx-policy.slow.test.ts
 * checks the sampled tokens against the unedited graph); the scale `Mul` stays right
 * after its MatMul so onnxruntime still fuses it. The output shapes come from the graph inputs:
 * `s` from `input_ids`, `L` (the attended length) from `attention_mask` (export.py's interface:
 * the mask covers the cache and the new tokens).
 *
 * The edit relies on the TorchScript export's shape of eager attention (export.py):
 * `MatMul(q, Transpose(Reshape(Expand(Unsqueeze(k, [2])))))` followed by one scalar `Mul`, and
 * `MatMul(weights, Reshape(Expand(Unsqueeze(v, [2]))))`. Anything else is refused with the reason,
 * and the caller keeps the graph as it was.
 */
import { int64Initializer, node, sortTopologically, type GraphProto, type NodeProto } from './onnx-graph.js';

const PREFIX = 'grouped_attention';

/** Attention geometry the edit needs (config.json's `num_attention_heads`, the manifest's rest). */
export interface AttentionShape {
  readonly heads: number;
  readonly kvHeads: number;
  readonly headDim: number;
}

const toNumber = (v: number | string | { toNumber(): number }): number =>
  typeof v === 'object' ? v.toNumber() : Number(v);

function ints(n: NodeProto, name: string): number[] | undefined {
  return n.attribute.find((a) => a.name === name)?.ints?.map(toNumber);
}

/** Drops nodes none of whose outputs is read (the `repeat_kv` copies and their shape arithmetic). */
function dropUnread(graph: GraphProto): void {
  const outputs = new Set(graph.output.map((o) => o.name));
  for (;;) {
    const read = new Set(graph.node.flatMap((n) => n.input));
    const kept = graph.node.filter((n) => n.output.some((o) => read.has(o) || outputs.has(o)));
    if (kept.length === graph.node.length) return;
    graph.node = kept;
  }
}

/**
 * Rewires every `repeat_kv` of `graph` to grouped MatMuls; throws with the reason when the graph
 * is not one this edit understands or has no `repeat_kv` at all.
 */
export function groupedAttention(graph: GraphProto, shape: AttentionShape): void {
  const { heads, kvHeads, headDim } = shape;
  const rep = heads / kvHeads;
  if (!Number.isInteger(rep) || rep < 2)
    throw new Error(`${heads} heads over ${kvHeads} KV heads: nothing to group`);
  const producer = new Map<string, NodeProto>();
  const readers = new Map<string, NodeProto[]>();
  for (const n of graph.node) {
    n.output.forEach((o) => producer.set(o, n));
    n.input.forEach((i) => readers.set(i, [...(readers.get(i) ?? []), n]));
  }
  const only = (name: string, opType: string): NodeProto | undefined => {
    const r = readers.get(name) ?? [];
    return r.length === 1 && r[0]?.opType === opType ? r[0] : undefined;
  };
  const constantInts = (name: string): number[] | undefined => {
    const p = producer.get(name);
    const init = graph.initializer.find((t) => t.name === name);
    const t = init ?? (p?.opType === 'Constant' ? p.attribute.find((a) => a.name === 'value')?.t : undefined);
    if (t?.int64Data?.length) return t.int64Data.map(toNumber);
    if (t?.rawData?.length) {
      const view = new DataView(t.rawData.buffer, t.rawData.byteOffset, t.rawData.byteLength);
      return Array.from({ length: t.rawData.byteLength / 8 }, (_, i) =>
        Number(view.getBigInt64(8 * i, true)),
      );
    }
    return undefined;
  };
  const T = (n: string) => `${PREFIX}/${n}`;
  const added: NodeProto[] = [];
  let keys = 0;
  let values = 0;
  for (const expand of graph.node.filter((n) => n.opType === 'Expand')) {
    const unsqueeze = producer.get(expand.input[0] as string);
    if (unsqueeze?.opType !== 'Unsqueeze') continue;
    const axes = ints(unsqueeze, 'axes') ?? constantInts(unsqueeze.input[1] ?? '');
    const reshape = only(expand.output[0] as string, 'Reshape');
    if (axes?.length !== 1 || axes[0] !== 2 || !reshape) continue;
    const kv5 = unsqueeze.output[0] as string; // [b, kv, 1, L, d]
    const name = expand.name ?? kv5;
    const transpose = only(reshape.output[0] as string, 'Transpose');
    if (transpose) {
      // keys: scores = MatMul(q, kᵀ), then the scale
      const perm = ints(transpose, 'perm');
      const matmul = only(transpose.output[0] as string, 'MatMul');
      if (perm?.join() !== '0,1,3,2' || !matmul || matmul.input[1] !== transpose.output[0])
        throw new Error(`${name}: repeated keys are not read by MatMul(q, Transpose(k, [0, 1, 3, 2]))`);
      const scale = only(matmul.output[0] as string, 'Mul');
      if (!scale) throw new Error(`${name}: the attention scores are not scaled by one Mul`);
      const scaled = scale.output[0] as string;
      const q5 = `${name}/${PREFIX}/query`;
      const kT5 = `${name}/${PREFIX}/key_t`;
      const scores5 = `${name}/${PREFIX}/scores`;
      const scaled5 = `${name}/${PREFIX}/scaled`;
      added.push(
        node('Reshape', q5, [matmul.input[0] as string, T('query_shape')], [q5]),
        {
          ...node('Transpose', kT5, [kv5], [kT5]),
          attribute: [{ name: 'perm', type: 7, ints: [0, 1, 2, 4, 3] }],
        }, // 7 = INTS
        node('MatMul', scores5, [q5, kT5], [scores5]),
        node('Reshape', `${name}/${PREFIX}/scores_by_head`, [scaled5, T('scores_shape')], [scaled]),
      );
      scale.input = scale.input.map((i) => (i === matmul.output[0] ? scores5 : i));
      scale.output = [scaled5];
      graph.node = graph.node.filter((n) => n !== matmul);
      keys++;
    } else {
      // values: MatMul(weights, v)
      const matmul = only(reshape.output[0] as string, 'MatMul');
      if (!matmul || matmul.input[1] !== reshape.output[0])
        throw new Error(`${name}: repeated values are not read by MatMul(weights, v)`);
      const weights5 = `${name}/${PREFIX}/weights`;
      const out5 = `${name}/${PREFIX}/out`;
      added.push(
        node('Reshape', weights5, [matmul.input[0] as string, T('weights_shape')], [weights5]),
        node('MatMul', out5, [weights5, kv5], [out5]),
        node(
          'Reshape',
          `${name}/${PREFIX}/out_by_head`,
          [out5, T('out_shape')],
          [matmul.output[0] as string],
        ),
      );
      graph.node = graph.node.filter((n) => n !== matmul);
      values++;
    }
  }
  if (keys === 0 || keys !== values)
    throw new Error(`found ${keys} repeated keys and ${values} repeated values`);
  const inputs = new Set(graph.input.map((i) => i.name));
  if (!inputs.has('input_ids') || !inputs.has('attention_mask'))
    throw new Error('no input_ids / attention_mask input to take s and L from');
  graph.initializer.push(
    int64Initializer(T('query_shape'), [0, kvHeads, rep, -1, headDim]), // [b, kv, rep, s, d]
    int64Initializer(T('out_shape'), [0, heads, -1, headDim]), // [b, H, s, d]
    int64Initializer(T('scores_head'), [0, heads]),
    int64Initializer(T('weights_head'), [0, kvHeads, rep]),
  );
  const shapeOf = (input: string, out: string, start: number, end?: number): NodeProto => ({
    ...node('Shape', T(out), [input], [T(out)]),
    attribute: [
      { name: 'start', type: 2, i: start },
      ...(end === undefined ? [] : [{ name: 'end', type: 2, i: end }]),
    ],
  });
  added.push(
    shapeOf('input_ids', 'new_length', 1, 2), // [s]
    shapeOf('attention_mask', 'attended_length', 1, 2), // [L]
    node(
      'Concat',
      T('scores_shape'),
      [T('scores_head'), T('new_length'), T('attended_length')],
      [T('scores_shape')],
      0,
    ),
    node(
      'Concat',
      T('weights_shape'),
      [T('weights_head'), T('new_length'), T('attended_length')],
      [T('weights_shape')],
      0,
    ),
  );
  graph.node.push(...added);
  dropUnread(graph);
  sortTopologically(graph);
}
