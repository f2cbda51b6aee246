/**
 * SPA's conversation assembly, `ContextManager.get_lm_inputs` (docs/spa-prompts.md#conversation):
 * the system message, the instruction prefix, one user block per turn, the assistant's stored
 * responses and the `Reward:` messages.
 */
import type { HistoryEntry, PromptMode } from './types.js';

/** Chat roles SPA uses. */
type ChatRole = 'system' | 'user' | 'assistant';

/** One chat message, as passed to `tokenizer.apply_chat_template`. */
export interface ChatMessage {
  readonly role: ChatRole;
  readonly content: string;
}

/** SPA's system message; the trailing space is SPA's (docs/spa-prompts.md#conversation). */
const SYSTEM_PROMPT = "You're a helpful assistant. ";

/**
 * The per-turn format reminder (`FORMAT_PROMPT`, `enable_think=True`) of each mode
 * (docs/spa-prompts.md#conversation).
 */
const FORMAT_PROMPT: Readonly<Record<PromptMode, string>> = {
  wm: '<think> <observation> [current state] </observation> [Your thoughts] <prediction> [next state]</prediction> </think> <answer> [your answer] </answer>',
  base: '<think> [Your thoughts] </think> <answer> [your answer] </answer>',
};

/**
 * SPA's `max_tokens` for all three envs: only printed in the prompt, never enforced
 * (docs/spa-prompts.md#conversation).
 */
const SPA_MAX_RESPONSE_TOKENS = 100;

/** Options of `buildMessages`. */
export interface ConversationOptions {
  readonly mode: PromptMode;
  /** The "Max response length" number; defaults to SPA's 100. */
  readonly maxTokens?: number | undefined;
  /**
   * SPA's `prepare_for_update`: build the training sequence instead of the next prompt — the
   * final (state-only) entry is dropped and the last turn's reward is not appended, so the
   * conversation ends with the last assistant message (docs/spa-prompts.md#conversation,
   * docs/spa-ppo.md#sequence).
   */
  readonly prepareForUpdate?: boolean | undefined;
}

/** The user text that presents one state (docs/spa-prompts.md#conversation). */
function stateBlock(entry: HistoryEntry, turn: number, mode: PromptMode, maxTokens: number): string {
  if (entry.actionsLeft === undefined) {
    throw new TypeError(
      `history entry of turn ${turn} has a state but no actionsLeft; give the remaining budget`,
    );
  }
  return (
    `State:\n${entry.state}\nYou have ${entry.actionsLeft} actions left. ` +
    `Always output: ${FORMAT_PROMPT[mode]} with no extra text. Strictly follow this format. ` +
    `Max response length: ${maxTokens} words (tokens).\n`
  );
}

/**
 * The chat messages SPA sends for one env (docs/spa-prompts.md#conversation), literally: `prefix` (from
 * `instructionPrefix`) opens the first user message; each turn's text is appended to
 * whatever message is last (normally the user message opened by the previous reward), the
 * stored `llmResponse` becomes an assistant message, the reward a new user message.
 */
export function buildMessages(
  prefix: string,
  history: readonly HistoryEntry[],
  options: ConversationOptions,
): ChatMessage[] {
  const { mode, maxTokens = SPA_MAX_RESPONSE_TOKENS, prepareForUpdate = false } = options;
  // SPA drops the last entry whenever it has a state, which after a finished turn is the
  // state-only entry of turn n+1.
  const turns = prepareForUpdate && history.at(-1)?.state !== undefined ? history.slice(0, -1) : history;

  const messages: { role: ChatRole; content: string }[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: prefix },
  ];
  turns.forEach((entry, index) => {
    const tail = messages[messages.length - 1] as { role: ChatRole; content: string };
    tail.content += `\nTurn ${index + 1}:\n`;
    if (entry.state !== undefined) tail.content += stateBlock(entry, index + 1, mode, maxTokens);
    if (entry.llmResponse !== undefined) messages.push({ role: 'assistant', content: entry.llmResponse });
    const isLastTurn = index === turns.length - 1;
    if (entry.rewardText !== undefined && !(prepareForUpdate && isLastTurn)) {
      messages.push({ role: 'user', content: `Reward:\n${entry.rewardText}\n` });
    }
  });
  return messages;
}
