/**
 * `npm run bench -- generate [--tokens n] [--pairs n] [--no-python] [--large-tokens n] [--no-large] [--no-tiny]`:
 * decoding tokens/s of the
 * ONNX policy (onnxruntime-node) beside Python onnxruntime running the same incremental loop and
 * Python transformers `generate`, on the same tiny model and the same real SPA prompts
 * (tokenized once, outside the timing, on both sides), in one run. Every engine decodes greedily
 * exactly `--tokens` new tokens per row (stops disabled, so all do the same work); the time
 * includes the prompt pass. Both onnxruntime sides open their sessions with the same options:
 * 1 or 2 intra-op threads, all graph optimisations, sequential execution. Goals: ≥ 1.5×
 * transformers, ≥ 0.9× Python onnxruntime.
 *
 * A shared 2-core machine's load drifts from second to second, so onnxruntime-node and Python
 * onnxruntime (a `generate_reference.py serve` process kept open) run in strict alternation:
 * for each thread count and batch size, `--pairs` times (default 7) one call each, the order
 * rotating. Figures are medians over the pairs; "node ÷ it" is the median of the per-pair
 * ratios. Both run the same exported graph (split cache, last-position logits, grouped attention:
 * trainer/spa_trainer/export/graph.py) with the same cache folding rule (policies/onnx/kv-cache.ts),
 * so the ratio is the binding and the loop around it, not the graph.
 *
 * Last, the per-call floor: each side's `session.run` on a graph that does no work but has the
 * same number of inputs and outputs as the exported graph. The tiny policy's step is a few
 * hundred µs, so the binding's fixed cost per call is a visible share of it; the line says how
 * much of node's time that difference accounts for.
 *
 * Then the same alternation on a larger model (24.6 M parameters: hidden 512, 8 layers, the tiny
 * tokenizer, random weights; `largeModel`), onnxruntime-node against Python onnxruntime only,
 * `--large-tokens` (default 100) new tokens per row, and last the node ÷ Python ratios at both
 * sizes side by side. Goal at the larger size: ≥ 0.95×. The first run builds and exports it
 * (about a minute, cached in .cache/test-policy/).
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Rng } from '../envs/rng.js';
import { loadPolicyArtifact } from '../policies/onnx/artifact.js';
import { InferenceSession, Tensor } from 'onnxruntime-node';
import { OnnxCausalLm } from '../policies/onnx/causal-lm.js';
import { generateBatch } from '../policies/onnx/generate.js';
import { PolicyTokenizer } from '../policies/onnx/tokenizer.js';
import { spaPrompts } from '../policies/onnx/sample-prompts.js';
import { callReference, referenceFixture, referenceServer } from './python/generate-reference.js';
import { loadAverage, median } from './stats.js';

const BATCH_SIZES = [1, 8] as const;
const THREADS = [1, 2] as const; // the machine's 2 cores

/** One measured configuration. */
export interface GenerateResult {
  readonly engine: string;
  /** Intra-op threads. */
  readonly threads: number | string;
  readonly batch: number;
  readonly seconds: number;
  readonly tokens_per_s: number;
}

interface Options {
  readonly tokens: number;
  readonly pairs: number;
  readonly python: boolean;
  /** False: leave the tiny model out (`--no-tiny`, for the larger model's goal alone). */
  readonly tiny: boolean;
  /** New tokens per row on the larger model; 0 = leave it out. */
  readonly largeTokens: number;
}

function positive(flag: string, value: number): number {
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`bench generate: ${flag} must be a positive integer`);
  return value;
}

function parseArgs(args: readonly string[]): Options {
  let tokens = 400; // SPA's response budget, docs/spa-prompts.md#sampling
  let pairs = 7;
  let python = true;
  let tiny = true;
  let largeTokens = 100; // the larger model's prompt pass dominates anyway; keeps the suite to minutes
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--no-python') python = false;
    else if (args[i] === '--no-tiny') tiny = false;
    else if (args[i] === '--no-large') largeTokens = 0;
    else if (args[i] === '--large-tokens') largeTokens = positive('--large-tokens', Number(args[++i]));
    else if (args[i] === '--tokens') tokens = positive('--tokens', Number(args[++i]));
    else if (args[i] === '--pairs') pairs = positive('--pairs', Number(args[++i]));
    else
      throw new Error(
        `bench generate: unknown argument "${args[i]}"; expected --tokens n, --pairs n, --no-python, ` +
          '--large-tokens n, --no-large, --no-tiny',
      );
  }
  return { tokens, pairs, python, tiny, largeTokens };
}

const NODE = 'onnxruntime-node (this policy)';
const PYTHON_ORT = 'python onnxruntime';

/** One engine at one thread count: a timed call per batch size. */
interface Contender {
  readonly engine: string;
  readonly threads: number;
  run(batch: number): Promise<number>;
}

/** onnxruntime-node through the policy's own decoding loop, as a contender per thread count. */
async function nodeContenders(artifactFolder: string, prompts: readonly string[], tokens: number) {
  const artifact = await loadPolicyArtifact(artifactFolder);
  const tokenizer = new PolicyTokenizer(artifact);
  const promptIds = prompts.map((p) => tokenizer.encode(p));
  const generateOptions = {
    sampling: { temperature: 0, topP: 1 },
    stop: {
      stopIds: new Set<number>(),
      stopStrings: [],
      decode: (ids: readonly number[]) => tokenizer.decode(ids),
      maxNewTokens: tokens,
    },
  };
  const open = async (engine: string, threads: number) => {
    const lm = await OnnxCausalLm.create(artifact.modelPath, artifact.manifest, { intraOpThreads: threads });
    const run = async (batch: number) => {
      const requests = promptIds.slice(0, batch).map((ids) => ({ promptIds: ids, rng: new Rng(0) }));
      const start = performance.now();
      const out = await generateBatch(lm, requests, generateOptions);
      const seconds = (performance.now() - start) / 1000;
      if (out.some((g) => g.ids.length !== tokens)) throw new Error('bench: a row stopped early');
      return seconds;
    };
    return { contender: { engine, threads, run }, release: () => lm.release() };
  };
  return Promise.all(THREADS.map((t) => open(NODE, t)));
}

/** One configuration's paired runs: its seconds, and node's seconds in the same pairs. */
interface Measured {
  readonly result: GenerateResult;
  /** Per pair, node (same threads, batch) tokens/s ÷ this engine's; empty for node rows. */
  readonly ratios: readonly number[];
}

/**
 * For each thread count and batch size, the contenders at that thread count run one after the
 * other `pairs` times, the order rotating each time (a warm-up call each first).
 */
async function measurePaired(
  contenders: readonly Contender[],
  options: { readonly pairs: number; readonly tokens: number },
  label = '',
): Promise<Measured[]> {
  const measured: Measured[] = [];
  for (const threads of THREADS) {
    const group = contenders.filter((c) => c.threads === threads);
    for (const batch of BATCH_SIZES) {
      for (const c of group) await c.run(batch);
      const seconds = group.map((): number[] => []);
      for (let i = 0; i < options.pairs; i++) {
        for (let k = 0; k < group.length; k++) {
          const at = (i + k) % group.length;
          (seconds[at] as number[]).push(await (group[at] as Contender).run(batch));
        }
      }
      const nodeAt = group.findIndex((c) => c.engine === NODE);
      group.forEach((c, at) => {
        const s = seconds[at] as number[];
        const mid = median(s);
        const ratios =
          c.engine === NODE ? [] : s.map((x, i) => x / ((seconds[nodeAt] as number[])[i] as number));
        const result = {
          engine: c.engine,
          threads,
          batch,
          seconds: mid,
          tokens_per_s: (batch * options.tokens) / mid,
        };
        measured.push({ result, ratios });
      });
      console.log(`${label}threads ${threads}, batch ${batch} done; ${loadAverage()}`);
    }
  }
  return measured;
}

function table(measured: readonly Measured[]): string {
  const rows = measured.map(({ result: r, ratios }) => [
    r.engine,
    String(r.threads),
    String(r.batch),
    r.tokens_per_s.toFixed(0),
    r.seconds.toFixed(2),
    ratios.length
      ? `${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`
      : '',
  ]);
  const header = ['engine', 'threads', 'batch', 'tokens/s', 'seconds', 'node ÷ it: median of pairs (range)'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  return [header, ...rows].map((r) => r.map((c, i) => c.padEnd(widths[i] as number)).join('  ')).join('\n');
}

/** Per batch size: best node configuration (median tokens/s) ÷ the best of each Python engine. */
function goals(measured: readonly GenerateResult[]): string {
  const best = (batch: number, pick: (r: GenerateResult) => boolean) =>
    Math.max(...measured.filter((r) => r.batch === batch && pick(r)).map((r) => r.tokens_per_s));
  return BATCH_SIZES.map((batch) => {
    const node = best(batch, (r) => r.engine === NODE);
    const hf = node / best(batch, (r) => r.engine.startsWith('transformers'));
    const ort = node / best(batch, (r) => r.engine === PYTHON_ORT);
    return (
      `batch ${batch}: best node ÷ best transformers = ${hf.toFixed(2)}× (goal ≥ 1.5: ${hf >= 1.5 ? 'met' : 'NOT met'}), ` +
      `best node ÷ best python onnxruntime = ${ort.toFixed(2)}× (goal ≥ 0.9: ${ort >= 0.9 ? 'met' : 'NOT met'})`
    );
  }).join('\n');
}

/** Median µs of one `session.run` on `modelPath` (one-float inputs), 1 thread, as the policy calls it. */
async function nodeCallMicroseconds(modelPath: string, calls = 2000, rounds = 15): Promise<number> {
  const session = await InferenceSession.create(modelPath, {
    executionProviders: ['cpu'],
    executionMode: 'sequential',
    intraOpNumThreads: 1,
  });
  const feeds = Object.fromEntries(
    session.inputNames.map((name) => [name, new Tensor('float32', new Float32Array(1), [1])]),
  );
  const perCall: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const start = performance.now();
    for (let i = 0; i < calls; i++) await session.run(feeds);
    perCall.push(((performance.now() - start) * 1000) / calls);
  }
  await session.release();
  return median(perCall);
}

/**
 * The per-call floor of each side (see the header) and what the difference costs node in a
 * batch-1 run of `tokens` tokens (one forward call per token).
 */
async function callFloor(artifactFolder: string, tokens: number, nodeSeconds: number): Promise<string> {
  const { manifest } = await loadPolicyArtifact(artifactFolder);
  const [inputs, outputs] = [manifest.inputs.length, manifest.outputs.length];
  const python = await callReference<{ model: string; python_us: number }>('floor', [
    ...['--inputs', String(inputs), '--outputs', String(outputs)],
    ...['--model', join(tmpdir(), `spa-call-floor-${inputs}x${outputs}.onnx`)],
  ]);
  const nodeUs = await nodeCallMicroseconds(python.model);
  const extraMs = ((nodeUs - python.python_us) * tokens) / 1000;
  return (
    `per-call floor (a graph that does no work, ${inputs} inputs, ${outputs} outputs, 1 thread): ` +
    `onnxruntime-node ${nodeUs.toFixed(0)} µs, python onnxruntime ${python.python_us.toFixed(0)} µs; ` +
    `× ${tokens} calls = ${extraMs.toFixed(0)} ms, ` +
    `${((100 * extraMs) / (1000 * nodeSeconds)).toFixed(0)}% of node's batch-1, 1-thread run`
  );
}

/**
 * onnxruntime-node and (unless `--no-python`) Python onnxruntime on one artifact, in strict
 * alternation (`measurePaired`).
 */
async function measureArtifact(
  artifact: string,
  prompts: readonly string[],
  options: Options,
  tokens: number,
  label = '',
): Promise<{ measured: Measured[]; python: boolean }> {
  const nodes = await nodeContenders(artifact, prompts, tokens);
  const contenders: Contender[] = nodes.map((n) => n.contender);
  const server = options.python ? await referenceServer(artifact, prompts) : undefined;
  if (server) {
    for (const threads of THREADS) {
      contenders.push({
        engine: PYTHON_ORT,
        threads,
        run: async (batch) => (await server.request<{ seconds: number }>({ threads, batch, tokens })).seconds,
      });
    }
  }
  try {
    return {
      measured: await measurePaired(contenders, { pairs: options.pairs, tokens }, label),
      python: !!server,
    };
  } finally {
    await Promise.all([...nodes.map((n) => n.release()), server?.close()]);
  }
}

/** node ÷ Python onnxruntime at each thread count and batch size: median of the pairs (range). */
function nodeOverPython(measured: readonly Measured[]): string {
  return measured
    .filter((m) => m.result.engine === PYTHON_ORT)
    .map(({ result: r, ratios }) => {
      const range = `${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`;
      return `${r.threads} thread${r.threads === 1 ? '' : 's'} batch ${r.batch}: ${median(ratios).toFixed(2)}× (${range})`;
    })
    .join(', ');
}

const LARGE_GOAL = 0.95;

/**
 * The larger model (`generate_reference.py fixture --size 25m`: 24.6 M parameters, the tiny
 * tokenizer): node and Python onnxruntime only, `--large-tokens` new tokens per row. Goal: node ≥
 * 0.95× Python onnxruntime, the best node configuration against the best Python one per batch size.
 */
async function largeModel(options: Options): Promise<Measured[]> {
  const fixture = await referenceFixture('25m');
  const prompts = spaPrompts(
    (await loadPolicyArtifact(fixture.artifact)).chatTemplate,
    Math.max(...BATCH_SIZES),
  );
  console.log(
    `\nlarger model: ${fixture.artifact} (Qwen2 hidden 512, 8 layers, MLP 1536, 24.6 M parameters, tiny ` +
      `tokenizer, random weights); ${options.largeTokens} new tokens/row, greedy, the same prompts; ${loadAverage()}`,
  );
  const { measured, python } = await measureArtifact(
    fixture.artifact,
    prompts,
    options,
    options.largeTokens,
    '25m: ',
  );
  console.log(table(measured));
  for (const batch of python ? BATCH_SIZES : []) {
    const best = (engine: string) =>
      Math.max(
        ...measured
          .filter((m) => m.result.engine === engine && m.result.batch === batch)
          .map((m) => m.result.tokens_per_s),
      );
    const ratio = best(NODE) / best(PYTHON_ORT);
    console.log(
      `25m batch ${batch}: best node ÷ best python onnxruntime = ${ratio.toFixed(2)}× ` +
        `(goal ≥ ${LARGE_GOAL}: ${ratio >= LARGE_GOAL ? 'met' : 'NOT met'})`,
    );
  }
  return measured;
}

/** The tiny model: node and Python onnxruntime paired, then transformers, the goals and the call floor. */
async function tinyModel(options: Options): Promise<Measured[]> {
  const fixture = await referenceFixture();
  const prompts = spaPrompts(
    (await loadPolicyArtifact(fixture.artifact)).chatTemplate,
    Math.max(...BATCH_SIZES),
  );
  console.log(
    `model: ${fixture.artifact} (tiny Qwen2, test fixture); ${options.tokens} new tokens/row, greedy; ` +
      `${options.pairs} paired runs per configuration; ${loadAverage()}`,
  );
  const { measured, python } = await measureArtifact(fixture.artifact, prompts, options, options.tokens);
  if (!python) {
    console.log(table(measured));
    return measured;
  }
  // transformers runs last, once per configuration (it is the slow one and far from its goal).
  const hf = await callReference<{ results: GenerateResult[]; torch: string; onnxruntime: string }>(
    'bench',
    [
      ...['--artifact', fixture.artifact, '--model-dir', fixture.model_dir, '--engines', 'hf'],
      ...['--max-new-tokens', String(options.tokens), '--batch-sizes', BATCH_SIZES.join(',')],
      ...['--repeats', '3'],
    ],
    { prompts },
  );
  console.log(`python: torch ${hf.torch}, onnxruntime ${hf.onnxruntime}`);
  const all = [...measured, ...hf.results.map((result) => ({ result, ratios: [] }))];
  console.log(table(all));
  console.log(goals(all.map((m) => m.result)));
  const nodeB1 = measured.find(
    (m) => m.result.engine === NODE && m.result.threads === 1 && m.result.batch === 1,
  );
  if (nodeB1) console.log(await callFloor(fixture.artifact, options.tokens, nodeB1.result.seconds));
  return measured;
}

/** Entry point of the `generate` bench suite. */
export async function run(args: string[]): Promise<void> {
  const options = parseArgs(args);
  const tiny = options.tiny ? await tinyModel(options) : undefined;
  const large = options.largeTokens > 0 ? await largeModel(options) : undefined;
  if (options.python && tiny && large) {
    console.log(
      `\nonnxruntime-node ÷ python onnxruntime, median of the per-pair ratios (range):\n` +
        `  tiny (0.2 M parameters, ${options.tokens} tokens/row; goal ≥ 0.9): ${nodeOverPython(tiny)}\n` +
        `  25m (24.6 M parameters, ${options.largeTokens} tokens/row; goal ≥ ${LARGE_GOAL}): ${nodeOverPython(large)}`,
    );
  }
  console.log(loadAverage());
}
