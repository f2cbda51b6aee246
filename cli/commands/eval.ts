import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Command } from 'commander';
import { ENV_NAMES, parseEnvName, type PuzzleSource } from '../../envs/registry.js';
import { evaluatePolicy } from '../../streams/eval/evaluate.js';
import { connectSpaKafka, type SpaKafka } from '../../streams/kafka/spa-kafka.js';
import { BUILTIN_POLICIES } from '../../policies/builtin.js';
import { POLICY_SPEC_HELP, resolvePolicy } from '../../streams/policies/resolve.js';
import {
  addGenerationOptions,
  checkEvalLimits,
  MAX_ACTIONS_PER_TURN,
  MAX_EVAL_EPISODES,
  MAX_GROUP_SIZE,
  MAX_GROUPS,
  MAX_PASSES,
  oneOf,
  positiveInt,
  seedNumber,
  UsageError,
} from '../options.js';
import { checkOutputFile } from '../output-paths.js';
import { Progress } from '../../loop/progress.js';
import { COMMAND_SUMMARIES } from './summaries.js';

interface EvalOptions {
  policy: string;
  env: string;
  variant?: string;
  k: number;
  puzzles: number;
  source?: PuzzleSource;
  seed: number;
  passes: number;
  actionsPerTurn?: number;
  maxNewTokens?: number;
  stopAtAnswer: boolean;
  contextWindow?: number;
  device: 'cpu' | 'cuda';
  run?: string;
  policyTopic?: string;
  out?: string;
}

/** Seconds `--policy latest` may wait for its first policy before saying what it waits for. */
const WAITING_NOTICE_S = 5;

/** `random` and `oracle` have no versions (theirs is 0, like self-play v0); a trained policy shows its own. */
export function policyLabel(policy: string, version: number): string {
  return (BUILTIN_POLICIES as readonly string[]).includes(policy) ? policy : `${policy} v${version}`;
}

/** `spa eval`: Pass@1 / Pass@k of a policy on the paper's validation puzzles (docs/spa-eval.md). */
export function registerEvalCommand(program: Command): void {
  const command = program
    .command('eval')
    .description(COMMAND_SUMMARIES.eval)
    .requiredOption('--policy <spec>', POLICY_SPEC_HELP)
    .requiredOption('--env <env>', ENV_NAMES.join(' | '))
    .option('--variant <name>', "puzzle variant (default SPA's; others use generated puzzles)")
    .option('--k <n>', 'episodes per puzzle (the k of Pass@k)', positiveInt('--k', MAX_GROUP_SIZE), 8)
    .option(
      '--puzzles <n>',
      `number of validation puzzles; puzzles × k × passes at most ${MAX_EVAL_EPISODES}`,
      positiveInt('--puzzles', MAX_GROUPS),
      128,
    )
    .option(
      '--source <source>',
      "spa (the paper's puzzles) | generated",
      oneOf('--source', ['spa', 'generated'] as const),
    )
    .option('--seed <n>', 'sampling seed', seedNumber('--seed'), 0)
    .option(
      '--passes <n>',
      'passes over the same puzzles, averaged (SPA: 2)',
      positiveInt('--passes', MAX_PASSES),
      1,
    )
    .option(
      '--actions-per-turn <n>',
      'random | oracle: actions a turn (random: exactly n, default 3; oracle: at most n of its plan, default 5)',
      positiveInt('--actions-per-turn', MAX_ACTIONS_PER_TURN),
    )
    .option(
      '--device <device>',
      'ONNX policies: cpu | cuda',
      oneOf('--device', ['cpu', 'cuda'] as const),
      'cpu',
    )
    .option('--run <id>', "--policy latest: follow that `spa run`'s policy topic (spa.<id>.policy)")
    .option(
      '--policy-topic <topic>',
      '--policy latest: the PolicyUpdate topic to follow (default spa.policy)',
    )
    .option('--out <file.json>', 'also write the report as JSON')
    .action(async (options: EvalOptions) => {
      const env = parseEnvName(options.env);
      // Usage errors first, before a broker, a policy or an episode is touched.
      checkEvalLimits(options, { puzzles: '--puzzles', k: '--k', passes: '--passes' });
      if ((options.run || options.policyTopic) && options.policy !== 'latest')
        throw new UsageError(
          `--run and --policy-topic choose the topic --policy latest follows; got --policy ${options.policy}`,
        );
      if (options.run && options.policyTopic) throw new UsageError('give --run or --policy-topic, not both');
      if (
        options.actionsPerTurn !== undefined &&
        !(BUILTIN_POLICIES as readonly string[]).includes(options.policy)
      )
        throw new UsageError(
          `--actions-per-turn applies to --policy random or oracle, got --policy ${options.policy}`,
        );
      if (options.out) checkOutputFile('--out', options.out, { createParents: true });
      let kafka: SpaKafka | undefined;
      if (options.policy === 'latest') {
        const topics = options.policyTopic
          ? { names: { policy: options.policyTopic } }
          : options.run
            ? { prefix: `spa.${options.run}.` }
            : undefined;
        kafka = await connectSpaKafka({ clientId: 'spa-eval', topics });
      }
      const policy = await resolvePolicy(options.policy, {
        mode: 'base',
        seed: options.seed,
        actionsPerTurn: options.actionsPerTurn,
        kafka,
        maxNewTokens: options.maxNewTokens,
        stopAtAnswer: options.stopAtAnswer,
        contextWindow: options.contextWindow,
        executionProvider: options.device,
      });
      try {
        // `latest` waits for a PolicyUpdate; say on which topic, in case nothing publishes there.
        const waiting = setTimeout(() => {
          if (kafka)
            process.stderr.write(
              `[eval] waiting for a policy on ${kafka.topics.policy} (brokers ${kafka.config.brokers.join(',')}); ` +
                'a `spa run` publishes on spa.<run>.policy: pass --run <id> or --policy-topic <topic>\n',
            );
        }, WAITING_NOTICE_S * 1000);
        const progress = new Progress('eval', {
          key: 'episodes',
          value: options.puzzles * options.k * options.passes,
        });
        const report = await evaluatePolicy(policy.source, {
          env,
          variant: options.variant,
          puzzles: options.puzzles,
          k: options.k,
          source: options.source,
          passes: options.passes,
          onEpisode: () => {
            clearTimeout(waiting);
            progress.add('episodes');
          },
        });
        clearTimeout(waiting);
        progress.done();
        const pct = (x: number, se: number) => `${(100 * x).toFixed(1)} ± ${(100 * se).toFixed(1)}`;
        const passes = report.passes > 1 ? ` × ${report.passes} passes` : '';
        console.log(
          `${env}  policy ${policyLabel(report.policy, report.policyVersion)}  Pass@1 ${pct(report.pass1, report.pass1StdErr)}  ` +
            `Pass@${report.k} ${pct(report.passK, report.passKStdErr)}  (${report.groups} puzzles × ${report.k}${passes}; ± standard error)`,
        );
        console.log(
          `unbiased pass@k: ${report.curve.map((p) => `k=${p.k} ${(100 * p.value).toFixed(1)}`).join('  ')}`,
        );
        if (options.out) {
          mkdirSync(dirname(options.out), { recursive: true });
          writeFileSync(options.out, JSON.stringify(report, null, 2) + '\n');
        }
      } finally {
        await policy.close();
        await kafka?.close();
      }
    });
  addGenerationOptions(command);
}
