/**
 * Qwen2.5-Instruct's chat template (the `chat_template` of its tokenizer_config.json, no
 * tools) and SPA's generation prompt (reference §3.2). Written out because the prompt must
 * be byte-exact and there is no JS Jinja runtime worth a dependency for three lines.
 */
import type { ChatMessage } from './conversation.js';

/** The system message Qwen2.5's template inserts when the conversation has none. */
export const QWEN_DEFAULT_SYSTEM_PROMPT =
  'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.';

/** The assistant header appended by `add_generation_prompt=True`. */
export const QWEN_GENERATION_PROMPT = '<|im_start|>assistant\n';

/** Options of `chatTemplate`. */
export interface ChatTemplateOptions {
  /** `add_generation_prompt`: end with an open assistant turn. */
  readonly addGenerationPrompt: boolean;
}

/**
 * `tokenizer.apply_chat_template(messages, tokenize=False, …)` for Qwen2.5: each message is
 * `<|im_start|>{role}\n{content}<|im_end|>\n`.
 */
export function chatTemplate(messages: readonly ChatMessage[], options: ChatTemplateOptions): string {
  let text = '';
  if (messages[0]?.role !== 'system') {
    text += `<|im_start|>system\n${QWEN_DEFAULT_SYSTEM_PROMPT}<|im_end|>\n`;
  }
  for (const message of messages) {
    text += `<|im_start|>${message.role}\n${message.content}<|im_end|>\n`;
  }
  if (options.addGenerationPrompt) text += QWEN_GENERATION_PROMPT;
  return text;
}

/**
 * The exact text SPA hands to the model: the template with a generation prompt plus
 * `"<think>"`, so the model continues inside its thoughts (§3.2). The parser re-prepends
 * `"<think>"` to the continuation.
 */
export function generationPrompt(messages: readonly ChatMessage[]): string {
  return `${chatTemplate(messages, { addGenerationPrompt: true })}<think>`;
}
