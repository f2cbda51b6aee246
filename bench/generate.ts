/**
 * `npm run bench -- generate [--tokens n] [--repeats n] [--no-python]`: decoding tokens/s of the
 * ONNX policy (onnxruntime-node) beside Python transformers `generate` and Python onnxruntime
 * running the same incremental loop, on the same tiny model and the same real SPA prompts, in
 * one run. Every engine decodes greedily exactly `--tokens` new tokens per row (stops disabled,
 * so all do the same work); the time includes the prompt pass. Goals: ≥ 1.5× transformers,
 * ≥ 0.9× Python onnxruntime. Each figure is the fastest of `--repeats` runs (default 5).
 */
import { performance } from 'node:perf_hooks';
import { Rng } from '../envs/internal/rng.js';
import { loadPolicyArtifact } from '../streams/policies/onnx/artifact.js';
import { OnnxCausalLm } from '../streams/policies/onnx/causal-lm.js';
import { generateBatch } from '../streams/policies/onnx/generate.js';
import { PolicyTokenizer } from '../streams/policies/onnx/tokenizer.js';
import { callReference, referenceFixture, spaPrompts } from './python/generate-reference.js';

const BATCH_SIZES = [1, 8] as const;

/** One measured configuration. */
export interface GenerateResult {
  readonly engine: string;
  /** Intra-op threads: 1, or the engine's default. */
  readonly threads: number | string;
  readonly batch: number;
  readonly seconds: number;
  readonly tokens_per_s: number;
}

interface Options {
  readonly tokens: number;
  readonly repeats: number;
  readonly python: boolean;
}

function parseArgs(args: readonly string[]): Options {
  let tokens = 400; // SPA's response budget, reference §3.4
  let repeats = 5;
  let python = true;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--no-python') python = false;
    else if (args[i] === '--tokens') tokens = Number(args[++i]);
    else if (args[i] === '--repeats') repeats = Number(args[++i]);
    else
      throw new Error(
        `bench generate: unknown argument "${args[i]}"; expected --tokens n, --repeats n, --no-python`,
      );
  }
  if (!Number.isInteger(tokens) || tokens < 1)
    throw new Error('bench generate: --tokens must be a positive integer');
  if (!Number.isInteger(repeats) || repeats < 1)
    throw new Error('bench generate: --repeats must be a positive integer');
  return { tokens, repeats, python };
}

/**
 * Fastest of `repeats` timed calls after one warm-up call. The best run, not the median: on a
 * shared 2-core machine other processes only ever add time, so the minimum is the estimate of
 * what the engine itself costs (the Python side does the same).
 */
async function timed(fn: () => Promise<unknown>, repeats: number): Promise<number> {
  await fn();
  let best = Infinity;
  for (let i = 0; i < repeats; i++) {
    const start = performance.now();
    await fn();
    best = Math.min(best, (performance.now() - start) / 1000);
  }
  return best;
}

/** onnxruntime-node through the policy's own decoding loop, at 1 thread and the default. */
export async function measureOnnxNode(artifactFolder: string, prompts: readonly string[], options: Options) {
  const artifact = await loadPolicyArtifact(artifactFolder);
  const tokenizer = new PolicyTokenizer(artifact);
  const results: GenerateResult[] = [];
  for (const threads of [1, undefined]) {
    const lm = await OnnxCausalLm.create(artifact.modelPath, artifact.manifest, { intraOpThreads: threads });
    const generateOptions = {
      sampling: { temperature: 0, topP: 1 },
      stop: {
        stopIds: new Set<number>(),
        stopStrings: [],
        decode: (ids: readonly number[]) => tokenizer.decode(ids),
        maxNewTokens: options.tokens,
      },
    };
    for (const batch of BATCH_SIZES) {
      const run = async () => {
        // Tokenizing is part of the policy's work per `act`, so it is inside the timing.
        const requests = prompts
          .slice(0, batch)
          .map((p) => ({ promptIds: tokenizer.encode(p), rng: new Rng(0) }));
        const out = await generateBatch(lm, requests, generateOptions);
        if (out.some((g) => g.ids.length !== options.tokens)) throw new Error('bench: a row stopped early');
      };
      const seconds = await timed(run, options.repeats);
      results.push({
        engine: 'onnxruntime-node (this policy)',
        threads: threads ?? 'default',
        batch,
        seconds,
        tokens_per_s: (batch * options.tokens) / seconds,
      });
    }
    await lm.release();
  }
  return results;
}

const isNode = (r: GenerateResult) => r.engine.startsWith('onnxruntime-node');
const threadClass = (r: GenerateResult) => (String(r.threads) === '1' ? '1' : 'default');

/** The results, each Python row with "node ÷ it" at the same batch size and thread setting. */
function table(results: readonly GenerateResult[]): string {
  const rows = results.map((r) => {
    const node = results.find((n) => isNode(n) && n.batch === r.batch && threadClass(n) === threadClass(r));
    const ratio = !isNode(r) && node ? `${(node.tokens_per_s / r.tokens_per_s).toFixed(2)}×` : '';
    return [
      r.engine,
      String(r.threads),
      String(r.batch),
      r.tokens_per_s.toFixed(0),
      r.seconds.toFixed(2),
      ratio,
    ];
  });
  const header = ['engine', 'threads', 'batch', 'tokens/s', 'seconds', 'node ÷ it'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  return [header, ...rows].map((r) => r.map((c, i) => c.padEnd(widths[i] as number)).join('  ')).join('\n');
}

/** Per batch size: best node configuration against the best of each Python engine, with the goals. */
function goals(results: readonly GenerateResult[]): string {
  const best = (batch: number, pick: (r: GenerateResult) => boolean) =>
    Math.max(...results.filter((r) => r.batch === batch && pick(r)).map((r) => r.tokens_per_s));
  return BATCH_SIZES.map((batch) => {
    const node = best(batch, isNode);
    const hf = node / best(batch, (r) => r.engine.startsWith('transformers'));
    const ort = node / best(batch, (r) => r.engine.startsWith('python onnxruntime'));
    return (
      `batch ${batch}: best node ÷ best transformers = ${hf.toFixed(2)}× (goal ≥ 1.5: ${hf >= 1.5 ? 'met' : 'NOT met'}), ` +
      `best node ÷ best python onnxruntime = ${ort.toFixed(2)}× (goal ≥ 0.9: ${ort >= 0.9 ? 'met' : 'NOT met'})`
    );
  }).join('\n');
}

/** Entry point of the `generate` bench suite. */
export async function run(args: string[]): Promise<void> {
  const options = parseArgs(args);
  const fixture = await referenceFixture();
  const prompts = spaPrompts(Math.max(...BATCH_SIZES));
  console.log(
    `model: ${fixture.artifact} (tiny Qwen2, test fixture); ${options.tokens} new tokens/row, greedy`,
  );
  if (!options.python) {
    console.log(table(await measureOnnxNode(fixture.artifact, prompts, options)));
    return;
  }
  // The load of a shared machine drifts over minutes, so onnxruntime-node and Python
  // onnxruntime take turns (node, python, node, python) and each keeps its fastest run: neither
  // side gets the quieter minute alone. transformers runs last, once (it is the slow one).
  const python = (engines: string) =>
    callReference<{ results: GenerateResult[]; torch: string; onnxruntime: string }>(
      'bench',
      [
        ...['--artifact', fixture.artifact, '--model-dir', fixture.model_dir, '--engines', engines],
        ...['--max-new-tokens', String(options.tokens), '--batch-sizes', BATCH_SIZES.join(',')],
        ...['--repeats', String(options.repeats)],
      ],
      { prompts },
    );
  const nodeRuns: GenerateResult[][] = [];
  const ortRuns: GenerateResult[][] = [];
  for (let round = 0; round < 2; round++) {
    nodeRuns.push(await measureOnnxNode(fixture.artifact, prompts, options));
    ortRuns.push((await python('ort')).results);
  }
  const hf = await python('hf');
  console.log(`python: torch ${hf.torch}, onnxruntime ${hf.onnxruntime}`);
  const fastest = (runs: GenerateResult[][]) =>
    (runs[0] ?? []).map((first, i) =>
      runs.map((run) => run[i] ?? first).reduce((a, b) => (b.seconds < a.seconds ? b : a)),
    );
  const results = [...fastest(nodeRuns), ...fastest(ortRuns), ...hf.results];
  console.log(table(results));
  console.log(goals(results));
}
