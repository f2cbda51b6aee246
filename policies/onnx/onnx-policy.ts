/**
 * The LLM policy on onnxruntime-node: an exported policy folder (spa_trainer.export) continues SPA's
 * generation prompts (the conversation rendered with the artifact's own chat template, + `<think>`)
 * with SPA's sampling (docs/spa-generation.md: temperature 1, top-p 1, at most
 * 400 new tokens), one batch per `act` call, stopping at `<|im_end|>`/eos or the budget (and at
 * `</answer>` with `stopAtAnswer`).
 */
import { basename, resolve } from 'node:path';
import { Rng, streamRng } from '../../envs/rng.js';
import type { Policy, PolicyRequest } from '../policy.js';
import { loadPolicyArtifact, type PolicyManifest } from './artifact.js';
import { OnnxCausalLm, type ExecutionProvider } from './causal-lm.js';
import { generateBatch, type Generation, type GenerationRequest } from './generate.js';
import { checkSampling } from './sampler.js';
import { ANSWER_END } from './stop-detector.js';
import { PolicyTokenizer } from './tokenizer.js';

/** SPA's response budget (`max_tokens = response_length = 400`, docs/spa-generation.md#stop). */
const SPA_MAX_NEW_TOKENS = 400;

/** Options of `onnxPolicy`. */
export interface OnnxPolicyOptions {
  /** Artifact folder `<root>/v<version>/` with model.onnx, tokenizer files and manifest.json. */
  readonly folder: string;
  /** Default 1 (SPA); 0 = greedy. */
  readonly temperature?: number;
  /** Default 1 (SPA). */
  readonly topP?: number;
  /** Default 400 (SPA). */
  readonly maxNewTokens?: number;
  /** Also end a turn at `</answer>` (not SPA: it generates to eos or the budget). Default false. */
  readonly stopAtAnswer?: boolean;
  /**
   * Tokens the model attends to: a prompt longer than `contextWindow − maxNewTokens` loses its left
   * part, as training's left-truncated window did (docs/spa-generation.md#window). Default none
   * (SPA: prompts always fit).
   */
  readonly contextWindow?: number;
  /** Seeds the sampling streams; same seed + same requests ⇒ same continuations. Default 0. */
  readonly seed?: number;
  /** Default `cpu`. */
  readonly executionProvider?: ExecutionProvider;
  /** onnxruntime intra-op threads (see `SessionSettings`); default onnxruntime's choice. */
  readonly intraOpThreads?: number;
  /** Rows per forward batch; an `act` call with more requests runs in several batches. Default 64. */
  readonly maxBatchSize?: number;
  /** See `DecodeOptions.prefillTokenBudget`. */
  readonly prefillTokenBudget?: number;
}

/** The ONNX policy, plus lower-level access for tests and benchmarks. */
export interface OnnxPolicy extends Policy {
  readonly manifest: PolicyManifest;
  readonly tokenizer: PolicyTokenizer;
  /**
   * Continues raw prompt strings (each row with `rngs[i]`, or the next streams of the policy's
   * seed); `act` is this over each request's messages rendered with the artifact's own chat
   * template plus `<think>` (`chatTemplate.generationPrompt`).
   */
  generate(prompts: readonly string[], rngs?: readonly Rng[]): Promise<Generation[]>;
}

/**
 * Prompt tokens a turn keeps (the rightmost ones) so prompt and answer fit `contextWindow`; all of
 * them without a window.
 */
function promptTokenBudget(contextWindow: number | undefined, maxNewTokens: number): number {
  if (contextWindow === undefined) return Infinity;
  if (!Number.isInteger(contextWindow) || contextWindow <= maxNewTokens)
    throw new Error(
      `contextWindow ${contextWindow}: expected an integer above maxNewTokens (${maxNewTokens}), room for the prompt`,
    );
  return contextWindow - maxNewTokens;
}

/** Loads and verifies the artifact (sha256), opens the session, returns the policy. */
export async function onnxPolicy(options: OnnxPolicyOptions): Promise<OnnxPolicy> {
  const folder = resolve(options.folder);
  const sampling = checkSampling({ temperature: options.temperature ?? 1, topP: options.topP ?? 1 });
  const maxNewTokens = options.maxNewTokens ?? SPA_MAX_NEW_TOKENS;
  const maxBatchSize = options.maxBatchSize ?? 64;
  const promptBudget = promptTokenBudget(options.contextWindow, maxNewTokens);
  if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1) {
    throw new Error(`maxBatchSize ${maxBatchSize}: expected a positive integer`);
  }
  const artifact = await loadPolicyArtifact(folder);
  const tokenizer = new PolicyTokenizer(artifact);
  const lm = await OnnxCausalLm.create(artifact.modelPath, artifact.manifest, options);
  const seed = options.seed ?? 0;
  const seeds = new Rng(seed);
  const generateOptions = {
    sampling,
    stop: {
      stopIds: tokenizer.stopIds,
      decode: (ids: readonly number[]) => tokenizer.decode(ids),
      maxNewTokens,
      stopStrings: options.stopAtAnswer === true ? [ANSWER_END] : [],
    },
    prefillTokenBudget: options.prefillTokenBudget,
  };
  // One generation at a time: the session already uses every core, and interleaving two
  // batches would only thrash the cache. Concurrent `act` calls queue (block) here.
  let queue: Promise<unknown> = Promise.resolve();

  const generate = (prompts: readonly string[], rngs?: readonly Rng[]): Promise<Generation[]> => {
    if (rngs && rngs.length !== prompts.length) {
      throw new Error(`generate: ${rngs.length} rngs for ${prompts.length} prompts; give one per prompt`);
    }
    const requests: GenerationRequest[] = prompts.map((prompt, i) => ({
      promptIds: tokenizer.encode(prompt).slice(-promptBudget),
      rng: rngs?.[i] ?? new Rng(seeds.int(0, 0x7fffffff)),
    }));
    const run = async () => {
      const results: Generation[] = [];
      for (let start = 0; start < requests.length; start += maxBatchSize) {
        const batch = requests.slice(start, start + maxBatchSize);
        results.push(...(await generateBatch(lm, batch, generateOptions)));
      }
      return results;
    };
    const result = queue.then(run);
    queue = result.catch(() => undefined);
    return result;
  };

  let tokensDecoded = 0;
  return {
    name: `onnx:${basename(folder)}`,
    version: artifact.manifest.version,
    manifest: artifact.manifest,
    tokenizer,
    generate,
    act: async (requests: readonly PolicyRequest[]) => {
      // Each request samples from its own stream when it names one (PolicyRequest.stream).
      const streams = requests.map((r) => r.stream);
      const rngs = streams.every((s) => s !== undefined) ? streams.map((s) => streamRng(seed, s)) : undefined;
      const generations = await generate(
        requests.map((r) => artifact.chatTemplate.generationPrompt(r.messages)),
        rngs,
      );
      tokensDecoded += generations.reduce((sum, g) => sum + g.ids.length, 0);
      return generations.map((g) => g.text);
    },
    get tokensDecoded() {
      return tokensDecoded;
    },
    close: () => lm.release(),
  };
}
