/**
 * The "last-position logits" variant of an exported graph, built in memory when the session
 * opens. Why: the export returns logits for every input position, but the policy samples only
 * from each row's last one. In a prompt pass that is `batch × prompt × vocab` floats computed by
 * the LM head and then copied into a fresh JS buffer (onnxruntime-node copies every output):
 * 14 MB for the tiny test policy at batch 8, 2.9 GB for Qwen2.5's 152k vocabulary, which is why
 * long prompts had to go through in chunks. This is what HF `generate` does with
 * `logits_to_keep=1`. The variant slices the hidden states to the last position right before the
 * LM head, so `logits` is `[batch, 1, vocab]` on every call; a decoding step (one position)
 * computes exactly what it did before.
 *
 * The edit needs `logits` to be produced by a MatMul of the hidden states `[batch, seq, hidden]`
 * (export.py's TorchScript graph); anything else is refused with the reason, and the caller
 * keeps the graph as exported.
 */
import { int64Initializer, node, type GraphProto } from './onnx-graph.js';

const LOGITS = 'logits';
const LAST = 'last_logits';

/** Rewires `graph` so that `logits` holds each row's last position only; throws with the reason otherwise. */
export function lastPositionLogits(graph: GraphProto): void {
  const head = graph.node.find((n) => n.output.includes(LOGITS));
  if (!head) throw new Error(`no node produces ${LOGITS}`);
  if (head.opType !== 'MatMul') {
    throw new Error(
      `${LOGITS} comes from a ${head.opType} node (${head.name ?? '?'}), expected the LM head's MatMul`,
    );
  }
  const hidden = head.input[0] as string;
  const last = `${LAST}/hidden`;
  graph.initializer.push(
    int64Initializer(`${LAST}/starts`, [-1]),
    int64Initializer(`${LAST}/ends`, [2 ** 31 - 1]), // clamped to the sequence length
    int64Initializer(`${LAST}/axes`, [1]),
  );
  const slice = node(
    'Slice',
    `${LAST}/slice`,
    [hidden, `${LAST}/starts`, `${LAST}/ends`, `${LAST}/axes`],
    [last],
  );
  graph.node.splice(graph.node.indexOf(head), 0, slice); // hidden is produced before the head
  head.input = [last, ...head.input.slice(1)];
  // The declared `[batch, sequence, vocab]` would tie the logits' length to the input's.
  const dims = graph.output.find((o) => o.name === LOGITS)?.type?.tensorType?.shape?.dim;
  if (dims && dims.length === 3) dims[1] = { dimValue: 1 };
}
