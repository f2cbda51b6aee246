/**
 * `npm run gpu-check`'s onnxruntime-node part (docs/gpu.md): whether onnxruntime-node's CUDA
 * execution provider files are installed, and greedy decoding of an artifact on one provider
 * (the ids and the wall time), through the policy's own loop (generate.ts), so two providers can be
 * compared token for token and in tokens/s.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Rng } from '../../envs/rng.js';
import { loadPolicyArtifact } from './artifact.js';
import { OnnxCausalLm, type ExecutionProvider } from './causal-lm.js';
import { generateBatch } from './generate.js';
import { spaPrompts } from './sample-prompts.js';
import { PolicyTokenizer } from './tokenizer.js';

/** The files onnxruntime-node's install script fetches for the CUDA provider (script/install-metadata.js). */
const CUDA_FILES = ['libonnxruntime_providers_cuda.so', 'libonnxruntime_providers_shared.so'];

/** Where onnxruntime-node keeps its native files on this platform, and which CUDA files are missing. */
export interface CudaProviderFiles {
  readonly folder: string;
  readonly missing: readonly string[];
  /** The command that fetches them (needs api.nuget.org), run from the repository root. */
  readonly install: string;
}

/** onnxruntime-node's CUDA provider files on this machine (Linux x64 is the only CUDA build). */
export function cudaProviderFiles(cwd = process.cwd()): CudaProviderFiles {
  const require = createRequire(import.meta.url);
  const packageDir = join(dirname(require.resolve('onnxruntime-node')), '..'); // main: dist/index.js
  const folder = join(packageDir, 'bin', 'napi-v6', process.platform, process.arch);
  const missing = CUDA_FILES.filter((f) => !existsSync(join(folder, f)));
  // The install script skips them under ONNXRUNTIME_NODE_INSTALL(_CUDA)=skip (scripts/setup.mjs);
  // `=cuda12` forces the CUDA 12 files from the Microsoft.ML.OnnxRuntime.Gpu.Linux NuGet package.
  const install = `(cd ${relative(cwd, packageDir) || '.'} && ONNXRUNTIME_NODE_INSTALL=cuda12 node script/install.js)`;
  return { folder, missing, install };
}

/** One provider's greedy decoding of `batch` prompts. */
interface GreedyRun {
  readonly ids: readonly (readonly number[])[];
  readonly seconds: number;
  readonly tokensPerSecond: number;
}

/** An artifact opened on one provider, decoding greedily exactly `tokens` tokens a row (no stops). */
export interface GreedyDecoder {
  run(batch: number): Promise<GreedyRun>;
  release(): Promise<void>;
}

/**
 * Opens the artifact in `folder` on `provider`; `run(b)` decodes the first `b` of `prompts` SPA
 * prompts as one batch (the same prompts on every provider). Rejects when the provider cannot open
 * (causal-lm.ts names what the CUDA provider needs).
 */
export async function greedyDecoder(
  folder: string,
  provider: ExecutionProvider,
  prompts: number,
  tokens: number,
): Promise<GreedyDecoder> {
  const artifact = await loadPolicyArtifact(folder);
  const tokenizer = new PolicyTokenizer(artifact);
  const promptIds = spaPrompts(artifact.chatTemplate, prompts).map((p) => tokenizer.encode(p));
  const lm = await OnnxCausalLm.create(artifact.modelPath, artifact.manifest, {
    executionProvider: provider,
  });
  const options = {
    sampling: { temperature: 0, topP: 1 },
    stop: { stopIds: new Set<number>(), stopStrings: [], decode: () => '', maxNewTokens: tokens },
  };
  return {
    async run(batch) {
      const requests = promptIds.slice(0, batch).map((ids) => ({ promptIds: ids, rng: new Rng(0) }));
      const start = performance.now();
      const out = await generateBatch(lm, requests, options);
      const seconds = (performance.now() - start) / 1000;
      return { ids: out.map((g) => g.ids), seconds, tokensPerSecond: (batch * tokens) / seconds };
    },
    release: () => lm.release(),
  };
}
