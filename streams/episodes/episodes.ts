import { Observable, concatMap, range } from 'rxjs';
import {
  buildMessages,
  historyText,
  instructionPrefix,
  parseResponse,
  turnRewardText,
  type HistoryEntry,
} from '../../envs/protocol/index.js';
import { streamOf } from '../../envs/rng.js';
import type { Environment } from '../../envs/types.js';
import type { StepRecord } from '../../schemas/step-record.js';
import type { DemandGate } from '../demand-gate.js';
import type { Policy, PolicySource } from '../../policies/policy.js';
import { seedOf, type EpisodeConfig } from './episode-config.js';
import { shardOfGroup } from './shard.js';
import { timeSlices } from './time-slices.js';

/** Creates the environment for a seed (a generated puzzle or one of the paper's). */
export type EnvFactory = (seed: number) => Environment;

interface Slot {
  readonly env: Environment;
  readonly seed: number;
  readonly group: number;
  readonly member: number;
  readonly history: HistoryEntry[];
  numActions: number;
  done: boolean;
}

/** How {@link episodes} runs besides its config. */
export interface EpisodeOptions {
  /** Backpressure from the sink: each batch and turn waits until it has caught up (blocks). */
  readonly gate?: DemandGate;
  /**
   * Trajectory ids not to play again: what an earlier, killed attempt of this run (and shard)
   * already committed (streams/kafka/committed-trajectories.ts).
   */
  readonly skip?: ReadonlySet<string>;
  /**
   * Default true: each request names its trajectory's random stream (`PolicyRequest.stream`,
   * from the trajectory id without the run id, and the turn), so what a trajectory draws does
   * not depend on which others share its batch, shard or attempt. False: the policy draws in
   * call order, as evaluation wants (its passes replay the same ids and continue the sampling).
   */
  readonly trajectoryStreams?: boolean;
}

/**
 * The env × policy loop of SPA's es_manager (docs/spa-envs.md#manager) as a cold Observable of
 * StepRecords. Batches run one after another (concatMap: a batch starts only when the
 * previous one completed), and with a `gate` each batch and turn waits until the sink has
 * caught up — the producer blocks rather than buffering. The policy is resolved once per batch, so no
 * episode mixes policy versions. A sharded config plays only its shard's groups (shard.ts), and
 * `skip` leaves out trajectories already done; every batch still resolves its policy, so
 * `--policy latest` counts batches as the unsharded generator does.
 */
export function episodes(
  config: EpisodeConfig,
  makeEnv: EnvFactory,
  policy: PolicySource,
  options: EpisodeOptions = {},
): Observable<StepRecord> {
  return range(0, config.batches).pipe(
    concatMap((batch) => runBatch(config, makeEnv, policy, batch, options)),
  );
}

/** The id of member `member` of group `group` in batch `batch`: `<run>/<split>/b<batch>/g<group>/m<member>`. */
function trajectoryIdOf(config: EpisodeConfig, batch: number, group: number, member: number): string {
  return `${groupIdOf(config, batch, group)}/m${member}`;
}

/** The trajectory ids `config` plays (its shard's groups only), in the order it plays them. */
export function plannedTrajectoryIds(config: EpisodeConfig): string[] {
  const ids: string[] = [];
  for (let batch = 0; batch < config.batches; batch++)
    for (let group = 0; group < config.groups; group++) {
      if (shardOfGroup(config.groups, batch, group, config.shard.count) !== config.shard.index) continue;
      for (let member = 0; member < config.groupSize; member++)
        ids.push(trajectoryIdOf(config, batch, group, member));
    }
  return ids;
}

/** A slot's random stream at `turn`: named like its trajectory, less the run id (so the policy seed alone seeds it). */
function slotStream(config: EpisodeConfig, batch: number, slot: Slot, turn: number): number {
  return streamOf(`${config.split}/b${batch}/g${slot.group}/m${slot.member}@${turn}`);
}

function groupIdOf(config: EpisodeConfig, batch: number, group: number): string {
  return `${config.runId}/${config.split}/b${batch}/g${group}`;
}

function runBatch(
  config: EpisodeConfig,
  makeEnv: EnvFactory,
  policySource: PolicySource,
  batch: number,
  { gate, skip, trajectoryStreams = true }: EpisodeOptions,
): Observable<StepRecord> {
  return new Observable<StepRecord>((subscriber) => {
    let cancelled = false;
    // Many episodes are seconds of synchronous work: let timers and signals in between (time-slices.ts).
    const breathe = timeSlices();
    const play = async () => {
      await gate?.ready();
      const policy = typeof policySource === 'function' ? await policySource() : policySource;
      const slots = await createSlots(config, makeEnv, batch, skip, breathe, () => cancelled);
      if (slots.length === 0) return; // another shard's groups, or all done in an earlier attempt
      const prefix = instructionPrefix(slots[0]!.env, config.mode, config.maxActionsPerTraj);
      for (let turn = 1; turn <= config.maxTurns && !cancelled; turn++) {
        // Block while the sink is behind (DemandGate): the loop never runs ahead of it.
        await gate?.ready();
        const active = slots.filter((slot) => !slot.done);
        if (active.length === 0) break;
        const requests = [];
        for (const slot of active) {
          if (cancelled) return;
          const messages = buildMessages(prefix, slot.history, {
            mode: config.mode,
            maxTokens: config.maxTokens,
          });
          requests.push({
            env: config.env,
            messages,
            actionsLeft: config.maxActionsPerTraj - slot.numActions,
            view: slot.env.clone(),
            ...(trajectoryStreams ? { stream: slotStream(config, batch, slot, turn) } : {}),
          });
          await breathe();
        }
        const continuations = await policy.act(requests);
        if (continuations.length !== active.length) {
          throw new Error(
            `policy "${policy.name}" answered ${continuations.length} of ${active.length} requests`,
          );
        }
        for (const [i, slot] of active.entries()) {
          if (cancelled) return;
          subscriber.next(playTurn(config, policy, slot, turn, prefix, continuations[i] ?? '', batch));
          await breathe();
        }
      }
    };
    play().then(
      () => subscriber.complete(),
      (error: unknown) => subscriber.error(error),
    );
    return () => {
      cancelled = true;
    };
  });
}

async function createSlots(
  config: EpisodeConfig,
  makeEnv: EnvFactory,
  batch: number,
  skip: ReadonlySet<string> | undefined,
  breathe: () => Promise<void>,
  cancelled: () => boolean,
): Promise<Slot[]> {
  const slots: Slot[] = [];
  const { shard } = config;
  for (let group = 0; group < config.groups; group++) {
    if (shardOfGroup(config.groups, batch, group, shard.count) !== shard.index) continue;
    for (let member = 0; member < config.groupSize; member++) {
      if (cancelled()) return slots;
      if (skip?.has(trajectoryIdOf(config, batch, group, member))) continue;
      const seed = seedOf(config, batch, group);
      const env = makeEnv(seed);
      slots.push({
        env,
        seed,
        group,
        member,
        history: [{ state: env.state(), actionsLeft: config.maxActionsPerTraj }],
        numActions: 0,
        done: false,
      });
      await breathe();
    }
  }
  return slots;
}

function playTurn(
  config: EpisodeConfig,
  policy: Policy,
  slot: Slot,
  turn: number,
  prefix: string,
  continuation: string,
  batch: number,
): StepRecord {
  const state = slot.env.state();
  const actionsLeft = config.maxActionsPerTraj - slot.numActions;
  const parse = parseResponse(continuation, {
    mode: config.mode,
    env: slot.env,
    maxActionsPerTurn: config.maxActionsPerTurn,
    reproduceSpaFallbackBug: config.reproduceSpaFallbackBug,
  });
  // Truncate mapped actions to the remaining budget, execute in order, stop at done
  // (docs/spa-envs.md#manager).
  const planned = parse.validActions.slice(0, actionsLeft);
  const executed: string[] = [];
  const rewards: number[] = [];
  let envDone = false;
  let success = false;
  for (const action of planned) {
    const outcome = slot.env.step(action);
    executed.push(actionName(slot.env, action));
    rewards.push(outcome.reward);
    if (outcome.done) {
      envDone = true;
      success = outcome.success;
      break;
    }
  }
  slot.numActions += executed.length;
  const rewardText = turnRewardText(rewards, slot.env.rewardIsFloat);
  const llmResponse = historyText(parse);
  const current = slot.history[slot.history.length - 1]!;
  current.llmResponse = llmResponse;
  current.rewardText = rewardText;
  const outOfBudget = slot.numActions >= config.maxActionsPerTraj;
  slot.done = envDone || outOfBudget || turn >= config.maxTurns;
  if (!slot.done) {
    slot.history.push({ state: slot.env.state(), actionsLeft: config.maxActionsPerTraj - slot.numActions });
  }
  const groupId = groupIdOf(config, batch, slot.group);
  return {
    runId: config.runId,
    trajectoryId: trajectoryIdOf(config, batch, slot.group, slot.member),
    groupId,
    env: config.env,
    variant: config.variant,
    seed: slot.seed,
    slot: slot.member,
    split: config.split,
    mode: config.mode,
    policy: policy.name,
    policyVersion: policy.version,
    turn,
    state,
    actionsLeft,
    responseRaw: parse.raw,
    parse,
    llmResponse,
    executed,
    rewards,
    rewardText,
    stateAfter: slot.env.state(),
    penalty: parse.penalty ? config.formatPenalty : 0,
    done: envDone,
    // success = terminated and not truncated; a done env is truncated unless solved
    // (docs/spa-envs.md#manager).
    success: envDone && success,
    final: slot.done,
    prefix,
  };
}

function actionName(env: Environment, action: number | string): string {
  if (typeof action === 'string') return action;
  return env.actionNames?.[action - 1] ?? String(action);
}
