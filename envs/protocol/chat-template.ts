/**
 * A model's own chat template, rendered as transformers' `apply_chat_template(messages,
 * tokenize=False)` does (docs/spa-models.md#template), with `@huggingface/jinja`: Hugging Face's
 * Jinja implementation for JS, which applies transformers' `trim_blocks`/`lstrip_blocks` too.
 */
import { Template } from '@huggingface/jinja';
import type { ChatMessage } from './conversation.js';

/** What SPA appends to the generation prompt: the model continues inside its thoughts. */
const THINK_OPEN = '<think>';

/** Options of {@link ChatTemplate.render}. */
export interface RenderOptions {
  /** `add_generation_prompt`: end with an open assistant turn. */
  readonly addGenerationPrompt: boolean;
}

/** A compiled chat template plus the special tokens transformers passes to it. */
export class ChatTemplate {
  private readonly template: Template;

  /**
   * @param source the Jinja text (`chat_template.jinja`, or `chat_template` in tokenizer_config.json)
   * @param specialTokens `bos_token`, `eos_token`, … as strings, as transformers passes them
   */
  constructor(
    readonly source: string,
    private readonly specialTokens: Readonly<Record<string, string>> = {},
  ) {
    this.template = new Template(source);
  }

  /** `apply_chat_template(messages, tokenize=False, add_generation_prompt=…)`. */
  render(messages: readonly ChatMessage[], options: RenderOptions): string {
    return this.template.render({
      ...this.specialTokens,
      messages: messages.map((m) => ({ role: m.role, content: m.content })),
      add_generation_prompt: options.addGenerationPrompt,
    });
  }

  /**
   * The exact text SPA hands to the model: the template with a generation prompt plus
   * `<think>`, so the model continues inside its thoughts (docs/spa-models.md#template); the
   * parser re-prepends `<think>` to the continuation.
   */
  generationPrompt(messages: readonly ChatMessage[]): string {
    return this.render(messages, { addGenerationPrompt: true }) + THINK_OPEN;
  }
}

const SPECIAL_TOKEN_KEYS = [
  'bos_token',
  'eos_token',
  'unk_token',
  'sep_token',
  'pad_token',
  'cls_token',
  'mask_token',
] as const;

/**
 * The template of a tokenizer folder's files, as transformers loads it: `chat_template.jinja`
 * when there is one, else `chat_template` from tokenizer_config.json (a string, or a list of
 * named templates of which `default` is used); special tokens from tokenizer_config.json, where
 * each is a string or an added-token object with `content`.
 */
export function chatTemplateOf(
  files: { jinja: string | null; tokenizerConfig: object },
  where: string,
): ChatTemplate {
  const config = files.tokenizerConfig as Record<string, unknown>;
  const source = files.jinja ?? templateFromConfig(config['chat_template']);
  if (source === null) {
    throw new Error(
      `${where} has no chat template (no chat_template.jinja and no chat_template in tokenizer_config.json): a chat model is needed`,
    );
  }
  const specialTokens: Record<string, string> = {};
  for (const key of SPECIAL_TOKEN_KEYS) {
    const value = config[key];
    const content = typeof value === 'string' ? value : (value as { content?: unknown } | null)?.content;
    if (typeof content === 'string') specialTokens[key] = content;
  }
  return new ChatTemplate(source, specialTokens);
}

function templateFromConfig(value: unknown): string | null {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    const named = value.find((t: { name?: unknown }) => t?.name === 'default') as
      { template?: unknown } | undefined;
    return typeof named?.template === 'string' ? named.template : null;
  }
  return null;
}
