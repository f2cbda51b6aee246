import type { ChatMessage } from '../envs/protocol/conversation.js';
import type { Environment, EnvName } from '../envs/types.js';

/** One slot's request to a policy for its next assistant turn. */
export interface PolicyRequest {
  readonly env: EnvName;
  /** The conversation so far, ending with the user message that asks for this turn. */
  readonly messages: readonly ChatMessage[];
  /** Actions left in the trajectory budget. */
  readonly actionsLeft: number;
  /**
   * A read-only copy of the environment. Only privileged test/upper-bound policies (oracle)
   * may look at it; an LLM policy sees text only.
   */
  readonly view: Environment;
  /**
   * This request's random stream (envs/rng.ts `streamOf`): the episode loop names it after the
   * trajectory (less its run id) and turn, and a sampling policy draws for the request from `streamRng(seed,
   * stream)`, so a trajectory's draws do not depend on which other trajectories share the call.
   * A sharded or resumed generator then plays the same trajectories as one generator. Absent:
   * the policy draws from its own sequence, in request order.
   */
  readonly stream?: number;
}

/**
 * A policy: an async, batched `conversations → continuations` function. An LLM policy renders
 * each conversation with its own chat template plus `<think>` (envs/protocol/chat-template.ts);
 * a continuation is the text it generates after that `<think>`.
 */
export interface Policy {
  /** Short name recorded on every record (`random`, `oracle`, `onnx:<folder>`…). */
  readonly name: string;
  /** The policy version recorded on every record; a policy swap changes it between episodes. */
  readonly version: number;
  act(requests: readonly PolicyRequest[]): Promise<string[]>;
  /**
   * Tokens decoded so far by `act` (an LLM policy counts them; others leave it out). A running
   * total, read by decorators such as `meteredPolicy`, so the policy itself never calls telemetry.
   */
  readonly tokensDecoded?: number;
  /** Release resources (sessions, consumers). */
  close?(): Promise<void>;
}

/** A policy, or a function returning the policy to use for the next batch (live swap point). */
export type PolicySource = Policy | (() => Policy | Promise<Policy>);
