/**
 * Stage 4, evaluation (docs/spa-eval.md): Pass@1 / Pass@k of the random floor and the run's
 * policies on the validation puzzles, each with the `spa eval` command that reproduces it.
 */
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { readManifest, verifiedModel } from '../policies/onnx/index.js';
import { evaluatePolicy, type EvaluationResult } from '../streams/eval/evaluate.js';
import { resolvePolicy } from '../streams/policies/resolve.js';
import type { LoopConfig } from './configs.js';
import type { LoopContext } from './context.js';
import { policyFolder } from './export-policy.js';
import { generationOptions } from './generation.js';
import { log } from './log.js';
import { Progress } from './progress.js';
import type { SelfPlayResult } from './self-play-ppo.js';
import { typedCommand } from './typed-command.js';

/** One evaluation of the run, with the `spa eval` command that reproduces it. */
export interface LoopEvaluation extends EvaluationResult {
  readonly command: string;
  /**
   * Where in the loop the policy stands: `random floor`, `self-play v0` (the model that played the
   * SFT data: the warmed-up tiny model), `before PPO`, `PPO step <n>` or `after PPO`.
   */
  readonly stage: string;
}

/**
 * The stage `evaluate`: the random floor and the policy versions `config` asks for (the final one;
 * with `evalSftPolicy` also v0 and v1; with `evalCurve` a learning curve) of `selfPlay`'s artifacts.
 */
export function evaluation(ctx: LoopContext, selfPlay: SelfPlayResult): Promise<LoopEvaluation[]> {
  const { config, runDir } = ctx;
  const { artifacts, finalVersion } = selfPlay;
  // The final policy is evaluated by default; SFT's v1 too on request (each costs minutes on CPU).
  const versions = config.evalCurve
    ? curveVersions([...artifacts.keys()], finalVersion, config)
    : config.evalSftPolicy
      ? [Math.min(...artifacts.keys()), finalVersion]
      : [finalVersion];
  const chosen = new Map(versions.map((v) => [v, artifacts.get(v)!]));
  return ctx.timed('evaluate', () => evaluate(config, withSelfPlayPolicy(config, runDir, chosen)));
}

/**
 * The versions a learning curve evaluates: the first (PPO step 0), the final one, and those whose
 * PPO step (versions are `exportEvery` steps apart) is a multiple of `evalEvery` (0: every version).
 */
export function curveVersions(
  versions: readonly number[],
  finalVersion: number,
  config: Pick<LoopConfig, 'exportEvery' | 'evalEvery'>,
): number[] {
  const first = Math.min(...versions);
  return [...versions]
    .sort((a, b) => a - b)
    .filter((v) => {
      const step = (v - first) * config.exportEvery;
      return v === finalVersion || config.evalEvery === 0 || step % config.evalEvery === 0;
    });
}

/**
 * With `evalSftPolicy` (and no learning curve), the self-play policy v0 (the warmed-up model for a tiny one) is evaluated
 * too, so the summary shows what each stage added: warm-up, world-model SFT, PPO.
 */
function withSelfPlayPolicy(
  config: LoopConfig,
  runDir: string,
  artifacts: ReadonlyMap<number, string>,
): ReadonlyMap<number, string> {
  const v0 = policyFolder(join(runDir, 'policies'), 0);
  // a learning curve (`evalCurve`) is PPO's own: from the policy it starts from
  if (!config.evalSftPolicy || config.evalCurve || config.generator !== 'self-play' || !existsSync(v0))
    return artifacts;
  return new Map([[0, v0], ...artifacts]);
}

/** The stage of each evaluated version: v0 self-play, the first PPO's start, the last its end. */
function stagesOf(versions: readonly number[], config: LoopConfig): Map<number, string> {
  const sorted = [...versions].sort((a, b) => a - b);
  const ppo = sorted.filter((v) => v > 0 || config.generator !== 'self-play');
  const [start, final] = [ppo[0], ppo.at(-1)];
  return new Map(
    sorted.map((v) => [
      v,
      v === final
        ? 'after PPO'
        : v === start
          ? 'before PPO'
          : ppo.includes(v)
            ? `PPO step ${(v - start!) * config.exportEvery}`
            : 'self-play v0',
    ]),
  );
}

/**
 * Pass@1 / Pass@k of the random policy (a floor) and the given ONNX policy versions. Each policy
 * is built as `spa eval` builds it (`resolvePolicy`), so the recorded command gives the same numbers.
 */
async function evaluate(
  config: LoopConfig,
  artifacts: ReadonlyMap<number, string>,
): Promise<LoopEvaluation[]> {
  const run = async (label: string, spec: string, seed: number, stage: string): Promise<LoopEvaluation> => {
    const onnx = spec.startsWith('onnx:');
    const args = [
      ...['--policy', spec, '--env', config.env, '--puzzles', String(config.evalPuzzles)],
      ...['--k', String(config.evalK), '--passes', String(config.evalPasses), '--seed', String(seed)],
      ...(onnx ? ['--max-new-tokens', String(config.maxNewTokens), '--device', config.device] : []),
      ...(onnx && config.stopAtAnswer ? ['--stop-at-answer'] : []),
      ...(onnx && config.contextWindow > 0 ? ['--context-window', String(config.contextWindow)] : []),
    ];
    const policy = await resolvePolicy(spec, {
      mode: 'base',
      seed,
      ...generationOptions(config),
    });
    const progress = new Progress(`eval ${label}`, {
      key: 'episodes',
      value: config.evalPuzzles * config.evalK * config.evalPasses,
    });
    try {
      const result = await evaluatePolicy(policy.source, {
        env: config.env,
        puzzles: config.evalPuzzles,
        passes: config.evalPasses,
        k: config.evalK,
        onEpisode: () => progress.add('episodes'),
      });
      return { ...result, command: typedCommand(['eval', ...args]), stage };
    } finally {
      progress.done(); // its heartbeat stops with the evaluation, however it ends
      await policy.close();
    }
  };
  const floor = await run('random', 'random', 7, 'random floor');
  const stages = stagesOf([...artifacts.keys()], config);
  const stageOf = (version: number) => stages.get(version) ?? `v${version}`;
  const versions = await evaluateDistinct(artifacts, (version, folder) =>
    run(`v${version}`, `onnx:${folder}`, 11, stageOf(version)),
  );
  // a version that reused another's result (the same model bytes) keeps its own stage
  return [floor, ...versions.map((e) => ({ ...e, stage: stageOf(e.policyVersion) }))];
}

/**
 * Evaluates each version's artifact with `evaluateOne`, once per distinct model: a version whose
 * model file has the same sha256 as an evaluated one's (every version of a control arm, whose
 * learning rates are 0) gets that result under its own name, version and command, since an
 * evaluation is a function of the model bytes and the seed (the tokenizer and settings are the
 * run's). Each evaluation left out saves minutes of CPU here.
 */
export async function evaluateDistinct(
  artifacts: ReadonlyMap<number, string>,
  evaluateOne: (version: number, folder: string) => Promise<LoopEvaluation>,
): Promise<LoopEvaluation[]> {
  const byModel = new Map<string, { version: number; folder: string; result: LoopEvaluation }>();
  const results: LoopEvaluation[] = [];
  for (const [version, folder] of artifacts) {
    // A new model is checked against its manifest when evaluateOne loads it; a repeat is never
    // loaded, so its bytes are checked here before they are given another version's result.
    const { sha256 } = await readManifest(folder);
    const same = byModel.get(sha256);
    if (same) {
      await verifiedModel(folder);
      log(
        `eval v${version}: the same model as v${same.version} (sha256 ${sha256.slice(0, 12)}…), its result kept`,
      );
      results.push({
        ...same.result,
        policy: `onnx:${basename(folder)}`,
        policyVersion: version,
        command: same.result.command.replace(same.folder, folder),
      });
      continue;
    }
    const result = await evaluateOne(version, folder);
    byModel.set(sha256, { version, folder, result });
    results.push(result);
  }
  return results;
}
