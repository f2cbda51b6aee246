import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { envFactory } from '../../envs/registry.js';
import { episodeConfig } from '../../streams/episodes/episode-config.js';
import { evaluatePolicy, type EvaluationResult } from '../../streams/eval/evaluate.js';
import { generateToKafka } from '../../streams/kafka/generate-to-kafka.js';
import { connectSpaKafka, type SpaKafka } from '../../streams/kafka/spa-kafka.js';
import { builtinPolicy } from '../../streams/policies/builtin.js';
import { onnxPolicy } from '../../streams/policies/onnx/index.js';
import { resolvePolicy } from '../../streams/policies/resolve.js';
import { Progress } from '../progress.js';
import type { LoopConfig } from './configs.js';
import { runTrainerModule, trainerPython } from './trainer-process.js';

export interface LoopSummary {
  readonly runId: string;
  readonly runDir: string;
  readonly config: LoopConfig;
  readonly topics: Readonly<Record<string, string>>;
  readonly sftData: Readonly<Record<string, number>>;
  readonly sft: Readonly<Record<string, unknown>>;
  readonly selfPlay: Readonly<Record<string, number>>;
  /** Policy version → self-play batches the generator started with it. */
  readonly generatorVersions: Readonly<Record<string, number>>;
  readonly evaluations: readonly EvaluationResult[];
  readonly seconds: Readonly<Record<string, number>>;
}

const log = (line: string) => process.stderr.write(`[spa run] ${line}\n`);

/**
 * The whole SPA loop (reference §1), each stage a stream over the run's own Kafka topics:
 *   1. self-play data: generator policy → annotate → filter → spa.<run>.sft
 *   2. world-model SFT of the model (Python trainer) → ONNX export → PolicyUpdate v1
 *   3. self-play with `--policy latest` → spa.<run>.rollouts, while the PPO trainer consumes them
 *      and publishes v2, v3, …, which the generator swaps to between batches
 *   4. Pass@1 / Pass@k of the final policy on the paper's validation puzzles
 */
export async function runSpaLoop(
  config: LoopConfig,
  options: { runsDir: string; runId: string },
): Promise<LoopSummary> {
  const runDir = resolve(options.runsDir, options.runId);
  mkdirSync(runDir, { recursive: true });
  const seconds: Record<string, number> = {};
  const timed = async <T>(stage: string, work: () => Promise<T>): Promise<T> => {
    const started = Date.now();
    log(`── ${stage}`);
    try {
      return await work();
    } finally {
      seconds[stage] = (Date.now() - started) / 1000;
    }
  };

  const python = trainerPython();
  const kafka = await timed('kafka', () =>
    connectSpaKafka({ clientId: 'spa-run', topics: { prefix: `spa.${options.runId}.` } }),
  );
  try {
    const brokers = kafka.config.brokers.join(',');
    const sftData = await timed('generate sft data', () => generateSftData(config, kafka, options.runId));
    const sft = await timed('sft', () => trainSft(config, kafka, python, runDir, brokers));
    const { selfPlay, generatorVersions, evalArtifacts } = await timed('self-play + ppo', () =>
      selfPlayAndPpo(config, kafka, python, runDir, brokers, options.runId),
    );
    const evaluations = await timed('evaluate', () => evaluate(config, evalArtifacts));
    const summary: LoopSummary = {
      runId: options.runId,
      runDir,
      config,
      topics: kafka.topics,
      sftData,
      sft,
      selfPlay,
      generatorVersions,
      evaluations,
      seconds,
    };
    writeFileSync(join(runDir, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
    return summary;
  } finally {
    await kafka.close();
  }
}

async function generateSftData(config: LoopConfig, kafka: SpaKafka, runId: string) {
  const episodes = episodeConfig({
    env: config.env,
    runId: `${runId}-sft`,
    mode: 'wm',
    groups: config.sftGroups,
    groupSize: config.sftGroupSize,
    batches: config.sftBatches,
  });
  const progress = new Progress('sft data', {
    key: 'trajectories',
    value: config.sftGroups * config.sftGroupSize * config.sftBatches,
  });
  const counts = await generateToKafka(kafka, {
    episodes,
    makeEnv: envFactory({ name: config.env }),
    policy: builtinPolicy(config.generator, { mode: 'wm', seed: 0 }),
    pipeline: { target: 'sft' },
    transactionalId: `spa-run-${runId}-sft`,
    onRecord: (o) => progress.add(o.topic),
  });
  progress.done();
  return counts;
}

async function trainSft(
  config: LoopConfig,
  kafka: SpaKafka,
  python: string,
  runDir: string,
  brokers: string,
) {
  let metrics: Record<string, unknown> = {};
  await runTrainerModule(
    python,
    'spa_trainer.sft',
    [
      ['--model', config.model],
      ['--input', `kafka:${kafka.topics.sft}`],
      ['--epochs', String(config.sftEpochs)],
      ['--lr', String(config.sftLr)],
      ['--batch-size', String(config.sftBatchSize)],
      ['--max-length', String(config.sftMaxLength)],
      ['--out', join(runDir, 'sft')],
      ['--export', join(runDir, 'policies')],
      ['--publish', kafka.topics.policy],
      ['--brokers', brokers],
    ].flat(),
    {
      label: 'sft',
      env: trainerDeviceEnv(config),
      onLine: (line) => {
        const match = /^\[sft\] metrics (\{.*\})$/.exec(line);
        if (match) metrics = JSON.parse(match[1]!) as Record<string, unknown>;
      },
    },
  ).done;
  return metrics;
}

async function selfPlayAndPpo(
  config: LoopConfig,
  kafka: SpaKafka,
  python: string,
  runDir: string,
  brokers: string,
  runId: string,
) {
  const latest = await resolvePolicy('latest', {
    mode: 'base',
    kafka,
    maxStaleness: config.maxStaleness,
    seed: 1,
    maxNewTokens: config.maxNewTokens,
    executionProvider: config.device,
  });
  let finalVersion: number | undefined;
  const trainer = runTrainerModule(
    python,
    'spa_trainer.ppo_service',
    [
      ['--model', join(runDir, 'sft')],
      ['--input', `kafka:${kafka.topics.rollouts}`],
      ['--out', join(runDir, 'ppo')],
      ['--steps', String(config.ppoSteps)],
      ['--groups-per-step', String(config.ppoGroups)],
      ['--group-size', String(config.ppoGroupSize)],
      ['--export-every', String(config.exportEvery)],
      ['--export-root', join(runDir, 'policies')],
      ['--publish', kafka.topics.policy],
      ['--max-staleness', String(config.maxStaleness)],
      ['--dlq', `kafka:${kafka.topics.dlq}`], // the run's own topic: spa.dlq may not exist on this broker
      ['--brokers', brokers],
    ].flat(),
    {
      label: 'ppo',
      env: trainerDeviceEnv(config),
      onLine: (line) => {
        const done = /\] done: step \d+, version (\d+)/.exec(line);
        if (done) finalVersion = Number(done[1]);
      },
    },
  );
  try {
    const episodes = episodeConfig({
      env: config.env,
      runId: `${runId}-rl`,
      mode: 'base',
      groups: config.ppoGroups,
      groupSize: config.ppoGroupSize,
      batches: config.ppoSteps,
    });
    const progress = new Progress('self-play', {
      key: 'trajectories',
      value: config.ppoGroups * config.ppoGroupSize * config.ppoSteps,
    });
    const selfPlay = await generateToKafka(kafka, {
      episodes,
      makeEnv: envFactory({ name: config.env }),
      policy: latest.source,
      pipeline: { target: 'rollouts' },
      transactionalId: `spa-run-${runId}-rl`,
      onRecord: (o) => progress.add(o.topic),
    });
    progress.done();
    await trainer.done;
    // The trainer's last export is the final policy; wait until the follower has loaded it.
    const generatorVersions = Object.fromEntries(latest.follower!.batchesByVersion);
    if (finalVersion === undefined)
      throw new Error('the PPO trainer exited without reporting its final policy version');
    await latest.follower!.waitForVersion(finalVersion);
    const artifacts = latest.follower!.artifacts;
    // The final policy is evaluated by default; SFT's v1 too on request (each costs minutes on CPU).
    const versions = config.evalSftPolicy ? [Math.min(...artifacts.keys()), finalVersion] : [finalVersion];
    const evalArtifacts = new Map(versions.map((v) => [v, artifacts.get(v)!]));
    return { selfPlay, generatorVersions, evalArtifacts };
  } catch (error) {
    trainer.kill();
    throw error;
  } finally {
    await latest.close();
  }
}

/** Pass@1 / Pass@k of the random policy (a floor) and the given ONNX policy versions. */
async function evaluate(
  config: LoopConfig,
  artifacts: ReadonlyMap<number, string>,
): Promise<EvaluationResult[]> {
  const results: EvaluationResult[] = [];
  const run = async (label: string, policy: Parameters<typeof evaluatePolicy>[0]) => {
    const progress = new Progress(`eval ${label}`, {
      key: 'episodes',
      value: config.evalPuzzles * config.evalK,
    });
    const result = await evaluatePolicy(policy, {
      env: config.env,
      puzzles: config.evalPuzzles,
      k: config.evalK,
      onEpisode: () => progress.add('episodes'),
    });
    progress.done();
    results.push(result);
  };
  await run('random', builtinPolicy('random', { mode: 'base', seed: 7 }));
  for (const [version, folder] of artifacts) {
    const policy = await onnxPolicy({
      folder,
      seed: 11,
      maxNewTokens: config.maxNewTokens,
      executionProvider: config.device,
    });
    try {
      await run(`v${version}`, policy);
    } finally {
      await policy.close?.();
    }
  }
  return results;
}

/** The trainer picks CUDA whenever it sees a GPU; `--device cpu` hides GPUs from it. */
function trainerDeviceEnv(config: LoopConfig): NodeJS.ProcessEnv {
  return config.device === 'cpu' ? { CUDA_VISIBLE_DEVICES: '' } : {};
}
