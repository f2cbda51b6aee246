import type { Environment, EnvName } from '../../envs/types.js';
import type { ChatMessage } from '../../envs/protocol/conversation.js';

/** One slot's request to a policy for its next assistant turn. */
export interface PolicyRequest {
  readonly env: EnvName;
  /** The conversation so far, ending with the user message that asks for this turn. */
  readonly messages: readonly ChatMessage[];
  /** The exact generation prompt (chat template + `<think>`, reference §3.2) an LLM continues. */
  readonly prompt: string;
  /** Actions left in the trajectory budget. */
  readonly actionsLeft: number;
  /**
   * A read-only copy of the environment. Only privileged test/upper-bound policies (oracle)
   * may look at it; an LLM policy sees text only.
   */
  readonly view: Environment;
}

/**
 * A policy: an async, batched `prompts → continuations` function. A continuation is the text
 * the model generates after the prompt's trailing `<think>` (reference §3.2).
 */
export interface Policy {
  /** Short name recorded on every record (`random`, `oracle`, `onnx:<folder>`…). */
  readonly name: string;
  /** The policy version recorded on every record; a policy swap changes it between episodes. */
  readonly version: number;
  act(requests: readonly PolicyRequest[]): Promise<string[]>;
  /** Release resources (sessions, consumers). */
  close?(): Promise<void>;
}
