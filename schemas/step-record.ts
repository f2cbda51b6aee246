import type { ParseResult, PromptMode } from '../envs/protocol/index.js';
import type { EnvName } from '../envs/types.js';

/** One assistant turn of one slot, as the episode loop observed it (the stream's unit). */
export interface StepRecord {
  readonly runId: string;
  readonly trajectoryId: string;
  readonly groupId: string;
  readonly env: EnvName;
  readonly variant: string;
  readonly seed: number;
  /** Member index inside the group (all members share the seed, docs/spa-envs.md#manager). */
  readonly slot: number;
  readonly split: 'train' | 'val';
  readonly mode: PromptMode;
  readonly policy: string;
  readonly policyVersion: number;
  /** 1-based turn number. */
  readonly turn: number;
  /** `text_with_coordinates` state shown in this turn's user message. */
  readonly state: string;
  readonly actionsLeft: number;
  /** `"<think>" + continuation`: what the model produced. */
  readonly responseRaw: string;
  readonly parse: ParseResult;
  /** What entered the history: the canonical response when parsing succeeded, else the raw text. */
  readonly llmResponse: string;
  /** Action strings actually executed (after lookup, budget truncation and stop-at-done). */
  readonly executed: readonly string[];
  readonly rewards: readonly number[];
  /** Python repr of the turn reward, as the next user message shows it (docs/spa-prompts.md#reward-text). */
  readonly rewardText: string;
  readonly stateAfter: string;
  /** Format penalty added this turn (0 or the configured negative value). */
  readonly penalty: number;
  readonly done: boolean;
  readonly success: boolean;
  /** True on the slot's last turn: the trajectory is complete after this record. */
  readonly final: boolean;
  /** Instruction prefix of the first user message (same for every turn of a trajectory). */
  readonly prefix: string;
}
