/**
 * The PPO self-play runs in `generators` processes, 1 or n, on one code path: the same
 * `spa generate` flags for any n, and after a resume they carry where the trainer stands
 * (`--resumed-at`), so each process admits its batches as the resumed trainer's steps. The old
 * sharded path left that out: its processes counted batches from 0 and ran ahead of the trainer.
 */
import { describe, expect, it } from 'vitest';
import { loopConfig } from '../../loop/configs.js';
import type { LoopContext } from '../../loop/context.js';
import { PPO_SEED_BASE, selfPlayFlags } from '../../loop/self-play-ppo.js';
import { spaTopicNames } from '../../schemas/topics.js';
import type { SpaKafka } from '../../streams/kafka/spa-kafka.js';

function context(generators: number): LoopContext {
  const kafka = { topics: spaTopicNames({ prefix: 'spa.r.' }) } as unknown as SpaKafka;
  const config = { ...loopConfig('_2_sokoban'), generators };
  return {
    config,
    kafka,
    python: 'python',
    runDir: '/runs/r',
    runId: 'r',
    brokers: 'b:1',
    timed: (_, w) => w({ redo: false }),
    othersCores: () => 0,
  };
}

const flagValue = (args: readonly string[], flag: string) => {
  const i = args.indexOf(flag);
  return i < 0 ? undefined : args[i + 1];
};

describe('the self-play + PPO generators', () => {
  it('take the same flags for 1 generator or n', () => {
    expect(selfPlayFlags(context(1), undefined)).toEqual(selfPlayFlags(context(3), undefined));
  });

  it('follow the policy topic as the trainer schedules it, from the first step', () => {
    const ctx = context(1);
    const args = selfPlayFlags(ctx, undefined);
    expect(flagValue(args, '--policy')).toBe('latest');
    expect(flagValue(args, '--target')).toBe('rollouts');
    expect(flagValue(args, '--run-id')).toBe('r-rl');
    expect(flagValue(args, '--batches')).toBe(String(ctx.config.ppoSteps));
    expect(flagValue(args, '--seed-base')).toBe(String(PPO_SEED_BASE));
    expect(flagValue(args, '--max-staleness')).toBe(String(ctx.config.maxStaleness));
    expect(flagValue(args, '--export-every')).toBe(String(ctx.config.exportEvery));
    expect(args).not.toContain('--resumed-at');
  });

  it('after a resume, play the remaining steps admitted as the resumed trainer stands, for any n', () => {
    for (const n of [1, 2]) {
      const ctx = context(n);
      const args = selfPlayFlags(ctx, { step: 2, version: 2 });
      expect(flagValue(args, '--resumed-at')).toBe('2:2');
      expect(flagValue(args, '--run-id')).toBe('r-rl-from2');
      expect(flagValue(args, '--batches')).toBe(String(ctx.config.ppoSteps - 2));
      expect(flagValue(args, '--seed-base')).toBe(String(PPO_SEED_BASE + 2 * ctx.config.ppoGroupsPerStep));
    }
  });
});
