/**
 * `npm run bench -- generate [--tokens n] [--repeats n] [--rounds n] [--no-python]`: decoding
 * tokens/s of the ONNX policy (onnxruntime-node) beside Python transformers `generate` and Python
 * onnxruntime running the same incremental loop, on the same tiny model and the same real SPA
 * prompts (tokenized once, outside the timing, on both sides), in one run. Every engine decodes
 * greedily exactly `--tokens` new tokens per row (stops disabled, so all do the same work); the
 * time includes the prompt pass. Both onnxruntime sides open their sessions with the same
 * options: 1 or 2 intra-op threads, all graph optimisations, sequential execution. Goals:
 * ≥ 1.5× transformers, ≥ 0.9× Python onnxruntime.
 *
 * A shared 2-core machine's load drifts over minutes, so node and Python onnxruntime run in
 * `--rounds` rounds (default 3) in alternating order (node first, then Python first, …). In a
 * round each configuration's figure is the fastest of `--repeats` runs (other processes only
 * ever add time); the ratio node ÷ Python is taken within each round, and the report gives the
 * median over rounds. The whole-cache layout (the exported graph as is) runs beside the default
 * split cache at 1 thread, to show what the split saves.
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Rng } from '../envs/internal/rng.js';
import { loadPolicyArtifact } from '../streams/policies/onnx/artifact.js';
import { OnnxCausalLm, type CacheLayout } from '../streams/policies/onnx/causal-lm.js';
import { generateBatch } from '../streams/policies/onnx/generate.js';
import { PolicyTokenizer } from '../streams/policies/onnx/tokenizer.js';
import { callReference, referenceFixture, spaPrompts } from './python/generate-reference.js';

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
  readonly repeats: number;
  readonly rounds: number;
  readonly python: boolean;
}

function positive(flag: string, value: number): number {
  if (!Number.isInteger(value) || value < 1)
    throw new Error(`bench generate: ${flag} must be a positive integer`);
  return value;
}

function parseArgs(args: readonly string[]): Options {
  let tokens = 400; // SPA's response budget, reference §3.4
  let repeats = 3;
  let rounds = 3;
  let python = true;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--no-python') python = false;
    else if (args[i] === '--tokens') tokens = positive('--tokens', Number(args[++i]));
    else if (args[i] === '--repeats') repeats = positive('--repeats', Number(args[++i]));
    else if (args[i] === '--rounds') rounds = positive('--rounds', Number(args[++i]));
    else
      throw new Error(
        `bench generate: unknown argument "${args[i]}"; expected --tokens n, --repeats n, --rounds n, --no-python`,
      );
  }
  return { tokens, repeats, rounds, python };
}

/** Fastest of `repeats` timed calls after one warm-up call (the Python side does the same). */
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

const NODE = 'onnxruntime-node (this policy)';
const NODE_WHOLE = 'onnxruntime-node, whole cache';

/** onnxruntime-node through the policy's own decoding loop: split cache at 1 and 2 threads, whole cache at 1. */
export async function measureOnnxNode(artifactFolder: string, prompts: readonly string[], options: Options) {
  const artifact = await loadPolicyArtifact(artifactFolder);
  const tokenizer = new PolicyTokenizer(artifact);
  const promptIds = prompts.map((p) => tokenizer.encode(p));
  const results: GenerateResult[] = [];
  const setups: [string, number, CacheLayout][] = [
    ...THREADS.map((t): [string, number, CacheLayout] => [NODE, t, 'split']),
    [NODE_WHOLE, 1, 'whole'],
  ];
  for (const [engine, threads, cacheLayout] of setups) {
    const lm = await OnnxCausalLm.create(artifact.modelPath, artifact.manifest, {
      intraOpThreads: threads,
      cacheLayout,
    });
    if (lm.splitCache !== (cacheLayout === 'split')) throw new Error(`bench: ${lm.cacheNote}`);
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
        const requests = promptIds.slice(0, batch).map((ids) => ({ promptIds: ids, rng: new Rng(0) }));
        const out = await generateBatch(lm, requests, generateOptions);
        if (out.some((g) => g.ids.length !== options.tokens)) throw new Error('bench: a row stopped early');
      };
      const seconds = await timed(run, options.repeats);
      results.push({ engine, threads, batch, seconds, tokens_per_s: (batch * options.tokens) / seconds });
    }
    await lm.release();
  }
  return results;
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};
const key = (r: GenerateResult) => `${r.engine}|${String(r.threads)}|${r.batch}`;
const isPythonOrt = (r: GenerateResult) => r.engine.startsWith('python onnxruntime');

/** One configuration over the rounds: median tokens/s and seconds, and node ÷ it per round. */
interface Summary {
  readonly result: GenerateResult;
  readonly ratios: readonly number[];
}

/** Medians over rounds; each Python onnxruntime row gets node (same threads, batch) ÷ it per round. */
function summarise(rounds: readonly GenerateResult[][], once: readonly GenerateResult[]): Summary[] {
  const keys = [...new Set(rounds.flat().map(key))];
  const summaries = keys.map((k): Summary => {
    const runs = rounds.map((round) => round.find((r) => key(r) === k)).filter((r) => r !== undefined);
    const first = runs[0] as GenerateResult;
    const ratios = !isPythonOrt(first)
      ? []
      : rounds.map((round) => {
          const node = round.find(
            (r) => r.engine === NODE && r.batch === first.batch && r.threads === first.threads,
          );
          const python = round.find((r) => key(r) === k);
          return node && python ? node.tokens_per_s / python.tokens_per_s : NaN;
        });
    const seconds = median(runs.map((r) => r.seconds));
    return { result: { ...first, seconds, tokens_per_s: median(runs.map((r) => r.tokens_per_s)) }, ratios };
  });
  return [...summaries, ...once.map((result) => ({ result, ratios: [] }))];
}

function table(summaries: readonly Summary[]): string {
  const rows = summaries.map(({ result: r, ratios }) => [
    r.engine,
    String(r.threads),
    String(r.batch),
    r.tokens_per_s.toFixed(0),
    r.seconds.toFixed(2),
    ratios.length ? `${median(ratios).toFixed(2)}× (${ratios.map((x) => x.toFixed(2)).join(', ')})` : '',
  ]);
  const header = ['engine', 'threads', 'batch', 'tokens/s', 'seconds', 'node ÷ it, median (per round)'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  return [header, ...rows].map((r) => r.map((c, i) => c.padEnd(widths[i] as number)).join('  ')).join('\n');
}

/**
 * Per batch size: best node configuration ÷ best Python onnxruntime configuration within each
 * round (median over rounds), and best node (median) ÷ best transformers.
 */
function goals(rounds: readonly GenerateResult[][], hf: readonly GenerateResult[]): string {
  const best = (rs: readonly GenerateResult[], batch: number, pick: (r: GenerateResult) => boolean) =>
    Math.max(...rs.filter((r) => r.batch === batch && pick(r)).map((r) => r.tokens_per_s));
  return BATCH_SIZES.map((batch) => {
    const perRound = rounds.map(
      (rs) => best(rs, batch, (r) => r.engine === NODE) / best(rs, batch, isPythonOrt),
    );
    const node = median(rounds.map((rs) => best(rs, batch, (r) => r.engine === NODE)));
    const hfRatio = node / best(hf, batch, () => true);
    const ort = median(perRound);
    return (
      `batch ${batch}: best node ÷ best transformers = ${hfRatio.toFixed(2)}× (goal ≥ 1.5: ${hfRatio >= 1.5 ? 'met' : 'NOT met'}), ` +
      `best node ÷ best python onnxruntime = ${ort.toFixed(2)}× median of rounds ` +
      `(${perRound.map((x) => x.toFixed(2)).join(', ')}) (goal ≥ 0.9: ${ort >= 0.9 ? 'met' : 'NOT met'})`
    );
  }).join('\n');
}

const load = () =>
  `load average ${loadavg()
    .map((x) => x.toFixed(2))
    .join(', ')}`;

/** Entry point of the `generate` bench suite. */
export async function run(args: string[]): Promise<void> {
  const options = parseArgs(args);
  const fixture = await referenceFixture();
  const prompts = spaPrompts(Math.max(...BATCH_SIZES));
  console.log(
    `model: ${fixture.artifact} (tiny Qwen2, test fixture); ${options.tokens} new tokens/row, greedy; ${load()}`,
  );
  if (!options.python) {
    const rounds = [await measureOnnxNode(fixture.artifact, prompts, options)];
    console.log(table(summarise(rounds, [])));
    return;
  }
  const python = (engines: string) =>
    callReference<{ results: GenerateResult[]; torch: string; onnxruntime: string }>(
      'bench',
      [
        ...['--artifact', fixture.artifact, '--model-dir', fixture.model_dir, '--engines', engines],
        ...['--max-new-tokens', String(options.tokens), '--batch-sizes', BATCH_SIZES.join(',')],
        ...['--repeats', String(options.repeats), '--ort-threads', THREADS.join(',')],
      ],
      { prompts },
    );
  const rounds: GenerateResult[][] = [];
  for (let round = 0; round < options.rounds; round++) {
    const node = () => measureOnnxNode(fixture.artifact, prompts, options);
    const ort = async () => (await python('ort')).results;
    const [a, b] = round % 2 === 0 ? [await node(), await ort()] : [await ort(), await node()];
    rounds.push([...a, ...b]);
    console.log(
      `round ${round + 1}/${options.rounds} done (${round % 2 === 0 ? 'node' : 'python'} first); ${load()}`,
    );
  }
  // transformers runs last, once (it is the slow one and far from its goal).
  const hf = await python('hf');
  console.log(`python: torch ${hf.torch}, onnxruntime ${hf.onnxruntime}`);
  console.log(table(summarise(rounds, hf.results)));
  console.log(goals(rounds, hf.results));
  console.log(load());
}
