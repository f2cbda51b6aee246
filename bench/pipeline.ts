/**
 * `npm run bench -- pipeline [--trajectories N]`: the in-process generator pipeline
 * (streams/generator-pipeline.ts) with SPA's random generator policy over Sokoban, FrozenLake and Sudoku
 * (generated puzzles, world-model prompts, ground-truth annotation, SFT rows), every outbound record
 * serialised and thrown away (a null sink: no files, no Kafka). Run twice: records as JSON lines
 * (what `spa generate --out` writes) and as Avro single-object frames (what goes to Kafka).
 * Prints trajectories/s, SFT rows/s, serialised MB/s, time spent serialising, peak RSS, and the
 * Avro/JSON byte ratio.
 */
import { performance } from 'node:perf_hooks';
import { lastValueFrom, tap } from 'rxjs';
import { ENV_NAMES, envFactory } from '../envs/registry.js';
import type { EnvName } from '../envs/types.js';
import { spaSchemas } from '../schemas/index.js';
import type { Outbound } from '../schemas/outbound.js';
import { episodeConfig } from '../streams/episodes/episode-config.js';
import { toJsonLine } from '../streams/files/jsonl-sink.js';
import { generatorPipeline } from '../streams/generator-pipeline.js';
import { builtinPolicy } from '../policies/builtin.js';

/** How each outbound record is serialised. */
export type Encoding = 'json' | 'avro';

/** What one run of the pipeline measured. */
export interface PipelineStats {
  readonly encoding: Encoding;
  readonly seconds: number;
  readonly trajectories: number;
  readonly sftRows: number;
  readonly rejected: number;
  /** Serialised bytes of every record (trajectories, SFT rows, dead letters). */
  readonly bytes: number;
  /** Serialised bytes of the SFT rows alone. */
  readonly sftBytes: number;
  /** Wall time inside the serialiser. */
  readonly encodeSeconds: number;
  /** Highest resident set size seen during the run (process-wide, so it includes earlier runs). */
  readonly peakRssBytes: number;
}

const GROUP_SIZE = 8; // SPA: 32 groups × 8 samples per batch (docs/spa-data.md#generation)

/** A serialiser for one encoding: the byte length of a record as written. */
function serialiser(encoding: Encoding): (outbound: Outbound) => number {
  if (encoding === 'json') return (o) => Buffer.byteLength(toJsonLine(o), 'utf8') + 1; // + '\n'
  const schemas = spaSchemas();
  return (o) => {
    switch (o.topic) {
      case 'trajectories':
        return schemas.encode('Trajectory', o.record).length;
      case 'sft':
        return schemas.encode('SftRow', o.record).length;
      case 'rollouts':
        return schemas.encode('Rollout', o.record).length;
      case 'dlq':
        return schemas.encode('Rejected', o.record).length;
    }
  };
}

/** Samples RSS on a timer and on demand (the pipeline may run long stretches without yielding). */
class RssSampler {
  peak = process.memoryUsage.rss();
  private readonly timer = setInterval(() => this.sample(), 20);

  sample(): void {
    this.peak = Math.max(this.peak, process.memoryUsage.rss());
  }

  stop(): number {
    clearInterval(this.timer);
    this.sample();
    return this.peak;
  }
}

/** Runs the pipeline over the three envs, about `trajectories` episodes split evenly among them. */
export async function measurePipeline(trajectories: number, encoding: Encoding): Promise<PipelineStats> {
  const encode = serialiser(encoding);
  const rss = new RssSampler();
  const counts = { trajectories: 0, sft: 0, rollouts: 0, dlq: 0 };
  let bytes = 0;
  let sftBytes = 0;
  let encodeMs = 0;
  const groups = Math.max(1, Math.ceil(trajectories / ENV_NAMES.length / GROUP_SIZE));
  const start = performance.now();
  for (const env of ENV_NAMES) {
    await lastValueFrom(
      pipelineFor(env, groups).pipe(
        tap((o) => {
          const t0 = performance.now();
          const n = encode(o);
          encodeMs += performance.now() - t0;
          bytes += n;
          if (o.topic === 'sft') sftBytes += n;
          if (++counts[o.topic] % 256 === 0) rss.sample();
        }),
      ),
      { defaultValue: undefined },
    );
  }
  const seconds = (performance.now() - start) / 1000;
  return {
    encoding,
    seconds,
    trajectories: counts.trajectories,
    sftRows: counts.sft,
    rejected: counts.dlq,
    bytes,
    sftBytes,
    encodeSeconds: encodeMs / 1000,
    peakRssBytes: rss.stop(),
  };
}

function pipelineFor(env: EnvName, groups: number): ReturnType<typeof generatorPipeline> {
  const config = episodeConfig({ env, runId: `bench-${env}`, groups, groupSize: GROUP_SIZE, batches: 1 });
  const makeEnv = envFactory({ name: env, variant: config.variant, puzzles: 'generated' });
  // A fixed clock keeps both encodings' records identical, so their byte counts compare exactly.
  return generatorPipeline(config, makeEnv, builtinPolicy('random', { mode: 'wm', seed: 0 }), {
    target: 'sft',
    now: () => 1_700_000_000_000,
  });
}

const MB = 1e6;

/** The results as a table, one line per encoding, then the Avro/JSON byte ratios. */
export function formatTable(runs: readonly PipelineStats[]): string {
  const header = [
    'encoding',
    'traj',
    'traj/s',
    'sft rows',
    'rows/s',
    'MB',
    'MB/s',
    'encode MB/s',
    'B/sft row',
    'peak RSS MB',
  ];
  const lines = runs.map((r) => [
    r.encoding,
    String(r.trajectories),
    (r.trajectories / r.seconds).toFixed(0),
    String(r.sftRows),
    (r.sftRows / r.seconds).toFixed(0),
    (r.bytes / MB).toFixed(2),
    (r.bytes / MB / r.seconds).toFixed(2),
    (r.bytes / MB / r.encodeSeconds).toFixed(1),
    (r.sftBytes / Math.max(r.sftRows, 1)).toFixed(0),
    (r.peakRssBytes / MB).toFixed(0),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const row = (cells: readonly string[]): string =>
    cells.map((c, i) => c.padStart(widths[i] ?? 0)).join('  ');
  const out = [row(header), ...lines.map(row)];
  const json = runs.find((r) => r.encoding === 'json');
  const avro = runs.find((r) => r.encoding === 'avro');
  if (json && avro) {
    out.push(
      `Avro/JSON bytes: all records ${(avro.bytes / json.bytes).toFixed(3)}, SftRow ${(avro.sftBytes / json.sftBytes).toFixed(3)}`,
    );
  }
  return out.join('\n');
}

function parseTrajectories(args: readonly string[]): number {
  const at = args.indexOf('--trajectories');
  if (at < 0) return 1200;
  const text = args[at + 1];
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) {
    throw new Error(`--trajectories must be a positive integer, got "${text ?? ''}"`);
  }
  return n;
}

/** `npm run bench -- pipeline [--trajectories N]` (default 1200: 400 per env). */
export async function run(args: string[]): Promise<void> {
  const trajectories = parseTrajectories(args);
  // Warm-up (JIT, schema compilation) so the first measured encoding is not penalised.
  await measurePipeline(ENV_NAMES.length * GROUP_SIZE, 'json');
  await measurePipeline(ENV_NAMES.length * GROUP_SIZE, 'avro');
  const runs = [await measurePipeline(trajectories, 'json'), await measurePipeline(trajectories, 'avro')];
  console.log(
    `pipeline: random policy, ${ENV_NAMES.join(' + ')}, generated puzzles, null sink (node ${process.version})`,
  );
  console.log(formatTable(runs));
}
