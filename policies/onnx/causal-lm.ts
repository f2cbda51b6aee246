/**
 * The exported causal LM behind an onnxruntime-node session: one forward call over
 * `(input_ids, attention_mask, position_ids, past, recent)` returning each row's last-position
 * logits and the cache's newest columns (trainer/spa_trainer/export/graph.py's interface; the
 * loader checks its structure, graph-structure.ts).
 */
import { InferenceSession, Tensor } from 'onnxruntime-node';
import type { PolicyManifest } from './artifact.js';
import { checkStructure, recentName } from './graph-structure.js';
import { KvCache, type KvShape } from './kv-cache.js';

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
  /** `[batch, vocab]` row-major: each row's last position. */
  readonly logits: Float32Array;
  readonly cache: KvCache;
}

/** How to open the session. */
export interface SessionSettings {
  /** Default `cpu`. */
  readonly executionProvider?: ExecutionProvider;
  /**
   * onnxruntime's intra-op threads; default: onnxruntime's choice (one per core). A tiny model
   * runs fastest on 1 thread: its ops are too small to split, and idle workers spin.
   */
  readonly intraOpThreads?: number;
}

/** A causal LM session with the manifest's cache geometry. */
export class OnnxCausalLm {
  private constructor(
    private readonly session: InferenceSession,
    readonly shape: KvShape,
    readonly vocab: number,
    private readonly pastNames: readonly string[],
    private readonly presentNames: readonly string[],
  ) {}

  /** An empty cache for `batch` rows. */
  emptyCache(batch: number): KvCache {
    return KvCache.empty(this.shape, batch);
  }

  /**
   * Opens `modelPath` on `executionProvider`; checks the graph's structure (graph-structure.ts)
   * and its inputs against the manifest.
   */
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
    let session: InferenceSession;
    try {
      session = await InferenceSession.create(modelPath, {
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
    try {
      checkStructure(modelPath, manifest, session);
      if ([...session.inputNames].sort().join(',') !== [...manifest.inputs].sort().join(',')) {
        throw new Error(
          `${modelPath}: graph inputs [${session.inputNames.join(', ')}] differ from manifest.json's [${manifest.inputs.join(', ')}]`,
        );
      }
    } catch (error) {
      await session.release();
      throw error;
    }
    return new OnnxCausalLm(session, shape, manifest.vocab_size, pastNames, presentNames);
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
      feeds[recentName(name)] = past.recent[i] as Tensor;
    });
    const out = await this.session.run(feeds);
    const logits = out.logits;
    if (!logits || logits.dims[1] !== 1 || logits.dims[2] !== this.vocab) {
      throw new Error(`logits shape [${logits?.dims.join(', ')}], expected [${batch}, 1, ${this.vocab}]`);
    }
    const present = this.presentNames.map((name) => out[name] as Tensor);
    return { logits: logits.data as Float32Array, cache: past.next(present) };
  }

  /** Frees the native session. */
  async release(): Promise<void> {
    await this.session.release();
  }
}
