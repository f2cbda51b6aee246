/**
 * The exported causal LM behind an onnxruntime-node session: one forward call over
 * `(input_ids, attention_mask, position_ids, past)` returning the logits and the next cache
 * (export.py's graph interface).
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import type { PolicyManifest } from './artifact.js';
import { groupedAttention } from './grouped-attention-graph.js';
import { KvCache, type KvShape } from './kv-cache.js';
import { lastPositionLogits } from './last-logits-graph.js';
import { EditableModel } from './onnx-graph.js';
import { recentName, splitCache } from './split-cache-graph.js';

/** Where the session runs. CUDA needs onnxruntime-node's CUDA files (skipped by scripts/setup.mjs). */
export type ExecutionProvider = 'cpu' | 'cuda';

/** One forward call's inputs: `batch × seq` new tokens on top of `past`. */
export interface ForwardInput {
  readonly inputIds: BigInt64Array;
  /** `batch × (past.length + seq)`, 1 for real tokens, 0 for left padding. */
  readonly attentionMask: BigInt64Array;
  readonly positionIds: BigInt64Array;
  readonly batch: number;
  readonly seq: number;
  readonly past: KvCache;
}

/** One forward call's outputs. */
export interface ForwardOutput {
  /** `[batch, seq, vocab]` row-major. */
  readonly logits: Float32Array;
  /** Positions in `logits`: the input's `seq`, or 1 with the last-position-logits graph. */
  readonly seq: number;
  readonly cache: KvCache;
}

/**
 * How the KV cache travels between steps: `split` through the split-cache graph (only the
 * newest columns come back from onnxruntime each step; split-cache-graph.ts), `whole` through
 * the exported graph as is (the whole cache comes back each step), `auto` = `split` when the
 * graph allows it, else `whole`.
 */
export type CacheLayout = 'auto' | 'split' | 'whole';

/** How to open the session. */
export interface SessionSettings {
  /** Default `cpu`. */
  readonly executionProvider?: ExecutionProvider;
  /**
   * onnxruntime's intra-op threads; default: onnxruntime's choice (one per core). A tiny model
   * runs fastest on 1 thread: its ops are too small to split, and idle workers spin.
   */
  readonly intraOpThreads?: number;
  /** Default `auto`. Both layouts give the same logits bit for bit. */
  readonly cacheLayout?: CacheLayout;
  /**
   * Default true: logits of each row's last position only (last-logits-graph.ts), when the
   * graph allows it; false runs the export's all-position logits.
   */
  readonly lastPositionLogits?: boolean;
  /**
   * Default true: attention reads each key/value head once instead of the export's `repeat_kv`
   * copies (grouped-attention-graph.ts; same logits bit for bit), when the graph allows it.
   */
  readonly groupedAttention?: boolean;
}

/** The graph the session opens: the export with the edits that apply, and a note on which. */
interface OpenedGraph {
  readonly model: Uint8Array;
  readonly split: boolean;
  readonly lastLogits: boolean;
  readonly note: string;
}

/** config.json's `num_attention_heads` beside the model (the exported Hugging Face config). */
async function attentionHeads(modelPath: string): Promise<number> {
  const path = join(dirname(modelPath), 'config.json');
  const heads = (JSON.parse(await readFile(path, 'utf8')) as { num_attention_heads?: unknown })
    .num_attention_heads;
  if (typeof heads !== 'number') throw new Error(`${path} has no num_attention_heads`);
  return heads;
}

/**
 * The model bytes to open: the export with the split cache (per `layout`), last-position
 * logits (when `lastLogits`) and grouped attention, each edit skipped with its reason when the
 * graph does not allow it.
 */
async function modelFor(
  modelPath: string,
  settings: SessionSettings,
  pastNames: readonly string[],
  presentNames: readonly string[],
  shape: KvShape,
): Promise<OpenedGraph> {
  const original = await readFile(modelPath);
  const layout = settings.cacheLayout ?? 'auto';
  const wantLastLogits = settings.lastPositionLogits ?? true;
  const wantGrouped = settings.groupedAttention ?? true;
  if (layout === 'whole' && !wantLastLogits && !wantGrouped)
    return { model: original, split: false, lastLogits: false, note: 'graph as exported (requested)' };
  let editable: EditableModel;
  try {
    editable = EditableModel.decode(original);
  } catch (error) {
    const reason = `${modelPath}: cannot edit the graph: ${(error as Error).message}`;
    if (layout === 'split') throw new Error(`${reason} (use cacheLayout 'whole' or 'auto')`);
    return { model: original, split: false, lastLogits: false, note: `graph as exported (${reason})` };
  }
  const notes: string[] = [];
  let split = false;
  if (layout === 'whole') notes.push('whole cache (requested)');
  else {
    const reason = editable.tryEdit((graph) => splitCache(graph, pastNames, presentNames));
    if (reason && layout === 'split')
      throw new Error(`${modelPath}: no split-cache graph: ${reason} (use cacheLayout 'whole' or 'auto')`);
    split = reason === undefined;
    notes.push(split ? 'split cache' : `whole cache (no split-cache graph: ${reason})`);
  }
  let lastLogits = false;
  if (wantLastLogits) {
    const reason = editable.tryEdit(lastPositionLogits);
    lastLogits = reason === undefined;
    notes.push(lastLogits ? 'last-position logits' : `all-position logits (${reason})`);
  } else notes.push('all-position logits (requested)');
  if (wantGrouped) {
    const reason = await attentionHeads(modelPath).then(
      (heads) => editable.tryEdit((graph) => groupedAttention(graph, { ...shape, heads })),
      (error: Error) => error.message,
    );
    notes.push(reason === undefined ? 'grouped attention' : `repeated KV heads (${reason})`);
  } else notes.push('repeated KV heads (requested)');
  return { model: editable.encode(), split, lastLogits, note: notes.join(', ') };
}

/** A causal LM session with the manifest's cache geometry. */
export class OnnxCausalLm {
  private constructor(
    private readonly session: InferenceSession,
    readonly shape: KvShape,
    readonly vocab: number,
    private readonly pastNames: readonly string[],
    private readonly presentNames: readonly string[],
    /** True when the session runs the split-cache graph. */
    readonly splitCache: boolean,
    /** True when `logits` holds each row's last position only. */
    readonly lastPositionLogits: boolean,
    /** Which graph edits run, and why not when one does not (for logs and benches). */
    readonly graphNote: string,
  ) {}

  /** An empty cache for `batch` rows, in this session's layout. */
  emptyCache(batch: number): KvCache {
    return KvCache.empty(this.shape, batch, this.splitCache);
  }

  /** Opens `modelPath` on `executionProvider` and checks its inputs/outputs against the manifest. */
  static async create(
    modelPath: string,
    manifest: PolicyManifest,
    settings: SessionSettings = {},
  ): Promise<OnnxCausalLm> {
    const executionProvider = settings.executionProvider ?? 'cpu';
    const shape = {
      layers: manifest.num_layers,
      kvHeads: manifest.num_key_value_heads,
      headDim: manifest.head_dim,
    };
    const pastNames = manifest.inputs.filter((n) => n.startsWith('past_key_values.'));
    const presentNames = manifest.outputs.filter((n) => n.startsWith('present.'));
    if (pastNames.length !== 2 * shape.layers || presentNames.length !== 2 * shape.layers) {
      throw new Error(
        `${modelPath}: expected ${2 * shape.layers} past/present tensors for ${shape.layers} layers`,
      );
    }
    const { model, split, lastLogits, note } = await modelFor(
      modelPath,
      settings,
      pastNames,
      presentNames,
      shape,
    );
    let session: InferenceSession;
    try {
      session = await InferenceSession.create(model, {
        executionProviders: [executionProvider],
        graphOptimizationLevel: 'all',
        executionMode: 'sequential',
        ...(settings.intraOpThreads !== undefined ? { intraOpNumThreads: settings.intraOpThreads } : {}),
      });
    } catch (error) {
      const hint =
        executionProvider === 'cuda'
          ? ' (the CUDA provider needs onnxruntime-node installed without ONNXRUNTIME_NODE_INSTALL_CUDA=skip, ' +
            "on Linux x64 with CUDA 12; use executionProvider 'cpu' otherwise)"
          : '';
      throw new Error(`cannot open ${modelPath} on ${executionProvider}: ${(error as Error).message}${hint}`);
    }
    const expected = [...manifest.inputs, ...(split ? pastNames.map(recentName) : [])].sort().join(',');
    if ([...session.inputNames].sort().join(',') !== expected) {
      throw new Error(
        `${modelPath}: graph inputs [${session.inputNames.join(', ')}] differ from manifest.json's [${manifest.inputs.join(', ')}]`,
      );
    }
    return new OnnxCausalLm(
      session,
      shape,
      manifest.vocab_size,
      pastNames,
      presentNames,
      split,
      lastLogits,
      note,
    );
  }

  /** Runs the graph once. */
  async forward(input: ForwardInput): Promise<ForwardOutput> {
    const { batch, seq, past } = input;
    const feeds: Record<string, Tensor> = {
      input_ids: new Tensor('int64', input.inputIds, [batch, seq]),
      attention_mask: new Tensor('int64', input.attentionMask, [batch, past.length + seq]),
      position_ids: new Tensor('int64', input.positionIds, [batch, seq]),
    };
    this.pastNames.forEach((name, i) => {
      feeds[name] = past.tensors[i] as Tensor;
      if (past.recent) feeds[recentName(name)] = past.recent[i] as Tensor;
    });
    const out = await this.session.run(feeds);
    const logits = out.logits;
    const positions = this.lastPositionLogits ? 1 : seq;
    if (!logits || logits.dims[1] !== positions || logits.dims[2] !== this.vocab) {
      throw new Error(
        `logits shape [${logits?.dims.join(', ')}], expected [${batch}, ${positions}, ${this.vocab}]`,
      );
    }
    const present = this.presentNames.map((name) => out[name] as Tensor);
    return { logits: logits.data as Float32Array, seq: positions, cache: past.next(present) };
  }

  /** Frees the native session. */
  async release(): Promise<void> {
    await this.session.release();
  }
}
