/**
 * The "split cache" variant of an exported graph, built in memory when the session opens (the
 * artifact on disk is not changed). Why: onnxruntime-node copies every output into a fresh,
 * zero-filled JS ArrayBuffer, so feeding `present.*` back as `past_key_values.*` copied the
 * whole KV cache out of the native side on every decoding step (Python onnxruntime hands out
 * numpy views instead). The variant takes the cache in two parts, `past_key_values.*` (the
 * long, settled part) and `recent.*` (the last few columns), concatenates both with the new
 * key/value inside the graph exactly as before, and returns only `recent + new` as `present.*`.
 * Inputs are passed to onnxruntime without a copy, so a step now copies a few columns out
 * instead of the whole cache; `KvCache` folds `recent` into the settled part now and then.
 *
 * The edit relies on the TorchScript export's shape (export.py): each `present.*` is
 * `Concat(past_key_values.*, new, axis=-2)` and the past input is otherwise only read by
 * `Shape` (the past length) or by a one-input `Concat` (an identity). Anything else is refused
 * with the reason, and the caller keeps the whole-cache graph.
 */
import {
  attributeInt,
  int64Initializer,
  node,
  rename,
  sortTopologically,
  type GraphProto,
  type NodeProto,
} from './onnx-graph.js';

/** The input name that carries the recent columns of one `past_key_values.*` input. */
export function recentName(pastName: string): string {
  return `recent.${pastName.replace(/^past_key_values\./, '')}`;
}

const ONE_HOT = 'split_cache/sequence_axis_one_hot';

/** Drops one-input Concats (identities) whose output is not a graph output. */
function dropIdentityConcats(graph: GraphProto): void {
  const outputs = new Set(graph.output.map((o) => o.name));
  graph.node = graph.node.filter((n) => {
    const identity = n.opType === 'Concat' && n.input.length === 1 && !outputs.has(n.output[0] ?? '');
    if (identity) rename(graph, n.output[0] as string, n.input[0] as string);
    return !identity;
  });
}

/** Rewires one past/present pair; throws with the reason when the graph is not the expected shape. */
function splitOne(graph: GraphProto, past: string, present: string): void {
  const recent = recentName(past);
  const full = `split_cache/full.${present}`;
  const pastInfo = graph.input.find((i) => i.name === past);
  if (!pastInfo) throw new Error(`no graph input ${past}`);
  graph.input.push({ ...pastInfo, name: recent });
  let newColumns: string | undefined;
  const added: NodeProto[] = [];
  for (const n of graph.node.filter((m) => m.input.includes(past))) {
    const axis = attributeInt(n, 'axis');
    if (n.opType === 'Concat' && n.output[0] === present && n.input.length === 2 && n.input[0] === past) {
      if (axis !== -2 && axis !== 2)
        throw new Error(`${present} is concatenated on axis ${axis}, expected -2`);
      newColumns = n.input[1] as string;
      n.input = [past, recent, newColumns];
      n.output = [full];
    } else if (n.opType === 'Shape' && n.attribute.length === 0) {
      // shape(past) + shape(recent) · [0, 0, 1, 0]: the total past length on the sequence axis.
      const out = n.output[0] as string;
      n.output = [`${out}/past`];
      added.push(
        node('Shape', `${out}/recent_shape`, [recent], [`${out}/recent`]),
        node('Mul', `${out}/recent_length`, [`${out}/recent`, ONE_HOT], [`${out}/recent_length`]),
        node('Add', `${out}/total`, [`${out}/past`, `${out}/recent_length`], [out]),
      );
    } else {
      throw new Error(`${past} is read by a ${n.opType} node (${n.name ?? '?'}), expected Concat or Shape`);
    }
  }
  if (!newColumns) throw new Error(`no Concat(${past}, new) producing ${present}`);
  rename(graph, present, full);
  added.push(node('Concat', `split_cache/${present}`, [recent, newColumns], [present], -2));
  graph.node.push(...added);
}

/**
 * Rewires `graph` to the split-cache variant for the given past/present pairs (in the same
 * order). Throws with the reason when the graph is not one this edit understands.
 */
export function splitCache(
  graph: GraphProto,
  pastNames: readonly string[],
  presentNames: readonly string[],
): void {
  dropIdentityConcats(graph);
  graph.initializer.push(int64Initializer(ONE_HOT, [0, 0, 1, 0]));
  pastNames.forEach((past, i) => splitOne(graph, past, presentNames[i] as string));
  sortTopologically(graph);
}
