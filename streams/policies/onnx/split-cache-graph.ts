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
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

/** The input name that carries the recent columns of one `past_key_values.*` input. */
export function recentName(pastName: string): string {
  return `recent.${pastName.replace(/^past_key_values\./, '')}`;
}

// The subset of onnx.proto's messages this edit touches (protobufjs camelCases field names).
interface AttributeProto {
  name: string;
  i?: number | { toNumber(): number };
}
interface NodeProto {
  input: string[];
  output: string[];
  opType: string;
  name?: string;
  attribute: AttributeProto[];
}
interface ValueInfoProto {
  name: string;
  type?: { tensorType?: { shape?: { dim: unknown[] } } };
}
interface TensorProto {
  name?: string;
  dataLocation?: number;
}
interface GraphProto {
  node: NodeProto[];
  input: ValueInfoProto[];
  output: ValueInfoProto[];
  initializer: TensorProto[];
}
interface ModelProto {
  graph?: GraphProto;
}

let modelType: protobuf.Type | undefined;

function onnxModelType(): protobuf.Type {
  modelType ??= protobuf
    .loadSync(fileURLToPath(new URL('./onnx.proto', import.meta.url)))
    .lookupType('onnx.ModelProto');
  return modelType;
}

const INT64 = 7; // onnx.TensorProto.DataType.INT64
const EXTERNAL = 1; // onnx.TensorProto.DataLocation.EXTERNAL
const ONE_HOT = 'split_cache/sequence_axis_one_hot';

function node(opType: string, name: string, input: string[], output: string[], axis?: number): NodeProto {
  const attribute = axis === undefined ? [] : [{ name: 'axis', type: 2, i: axis }]; // 2 = INT
  return { opType, name, input, output, attribute };
}

function attributeInt(n: NodeProto, name: string): number | undefined {
  const value = n.attribute.find((a) => a.name === name)?.i;
  return typeof value === 'object' ? value.toNumber() : value;
}

/** Replaces every node input `from` with `to`. */
function rename(graph: GraphProto, from: string, to: string): void {
  for (const n of graph.node) n.input = n.input.map((i) => (i === from ? to : i));
}

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

/** Orders nodes so each comes after the producers of its inputs (ONNX requires it). */
function sortTopologically(graph: GraphProto): void {
  const ready = new Set<string>(['', ...graph.input.map((i) => i.name)]);
  for (const t of graph.initializer) ready.add(t.name ?? '');
  let pending = graph.node;
  const sorted: NodeProto[] = [];
  while (pending.length > 0) {
    const next = pending.filter((n) => !n.input.every((i) => ready.has(i)));
    if (next.length === pending.length) throw new Error('graph has a cycle or an undefined input');
    for (const n of pending) {
      if (next.includes(n)) continue;
      sorted.push(n);
      n.output.forEach((o) => ready.add(o));
    }
    pending = next;
  }
  graph.node = sorted;
}

/**
 * The split-cache variant of `model` (ONNX bytes) for the given past/present pairs (in the same
 * order). Throws with the reason when the graph is not one this edit understands.
 */
export function splitCacheGraph(
  model: Uint8Array,
  pastNames: readonly string[],
  presentNames: readonly string[],
): Uint8Array {
  const type = onnxModelType();
  const decoded = type.decode(model) as unknown as ModelProto;
  const graph = decoded.graph;
  if (!graph) throw new Error('the model has no graph');
  if (graph.initializer.some((t) => t.dataLocation === EXTERNAL)) {
    throw new Error('the model keeps weights in external data files, which an in-memory copy cannot resolve');
  }
  dropIdentityConcats(graph);
  graph.initializer.push({
    name: ONE_HOT,
    dataType: INT64,
    dims: [4],
    int64Data: [0, 0, 1, 0],
  } as TensorProto);
  pastNames.forEach((past, i) => splitOne(graph, past, presentNames[i] as string));
  sortTopologically(graph);
  return type.encode(decoded).finish();
}
