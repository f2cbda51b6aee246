/**
 * The exported graph as data, for the in-memory edits the policy makes when a session opens
 * (split-cache-graph.ts, last-logits-graph.ts): decode the ONNX bytes once with protobufjs and
 * `onnx.proto`, edit, encode once. The artifact on disk and its sha256 stay as they are.
 * Hand-written over protobufjs because no maintained JS package edits ONNX graphs.
 */
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

// The subset of onnx.proto's messages the edits touch (protobufjs camelCases field names).
interface AttributeProto {
  name: string;
  type?: number;
  i?: number | { toNumber(): number };
  ints?: (number | { toNumber(): number })[];
  t?: TensorProto;
}
export interface NodeProto {
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
export interface TensorProto {
  name?: string;
  dataType?: number;
  dims?: number[];
  int64Data?: (number | string | { toNumber(): number })[];
  rawData?: Uint8Array;
  dataLocation?: number;
}
export interface GraphProto {
  node: NodeProto[];
  input: ValueInfoProto[];
  output: ValueInfoProto[];
  initializer: TensorProto[];
}
interface ModelProto {
  graph?: GraphProto;
}

const INT64 = 7; // onnx.TensorProto.DataType.INT64
const EXTERNAL = 1; // onnx.TensorProto.DataLocation.EXTERNAL

let modelType: protobuf.Type | undefined;

function onnxModelType(): protobuf.Type {
  modelType ??= protobuf
    .loadSync(fileURLToPath(new URL('./onnx.proto', import.meta.url)))
    .lookupType('onnx.ModelProto');
  return modelType;
}

/** A decoded model whose graph can be edited and encoded again. */
export class EditableModel {
  private constructor(private readonly model: ModelProto) {}

  /** Decodes ONNX bytes; throws when there is no graph or weights live in external files. */
  static decode(bytes: Uint8Array): EditableModel {
    const model = onnxModelType().decode(bytes) as unknown as ModelProto;
    if (!model.graph) throw new Error('the model has no graph');
    if (model.graph.initializer.some((t) => t.dataLocation === EXTERNAL)) {
      throw new Error(
        'the model keeps weights in external data files, which an in-memory copy cannot resolve',
      );
    }
    return new EditableModel(model);
  }

  get graph(): GraphProto {
    return this.model.graph as GraphProto;
  }

  /**
   * Applies `edit`, or, when it throws, puts the graph back as it was and returns the reason
   * (an edit may fail half way; the caller then runs the graph without it).
   */
  tryEdit(edit: (graph: GraphProto) => void): string | undefined {
    const graph = this.graph;
    const saved = {
      node: graph.node.map((n) => ({ ...n, input: [...n.input], output: [...n.output] })),
      input: [...graph.input],
      output: [...graph.output],
      initializer: [...graph.initializer],
    };
    try {
      edit(graph);
      return undefined;
    } catch (error) {
      Object.assign(graph, saved);
      return (error as Error).message;
    }
  }

  encode(): Uint8Array {
    return onnxModelType().encode(this.model).finish();
  }
}

/** A node; `axis` becomes its INT attribute. */
export function node(
  opType: string,
  name: string,
  input: string[],
  output: string[],
  axis?: number,
): NodeProto {
  const attribute = axis === undefined ? [] : [{ name: 'axis', type: 2, i: axis }]; // 2 = INT
  return { opType, name, input, output, attribute };
}

/** An INT64 initializer. */
export function int64Initializer(name: string, values: readonly (number | string)[]): TensorProto {
  return { name, dataType: INT64, dims: [values.length], int64Data: [...values] };
}

export function attributeInt(n: NodeProto, name: string): number | undefined {
  const value = n.attribute.find((a) => a.name === name)?.i;
  return typeof value === 'object' ? value.toNumber() : value;
}

/** Replaces every node input `from` with `to`. */
export function rename(graph: GraphProto, from: string, to: string): void {
  for (const n of graph.node) n.input = n.input.map((i) => (i === from ? to : i));
}

/** Orders nodes so each comes after the producers of its inputs (ONNX requires it). */
export function sortTopologically(graph: GraphProto): void {
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
