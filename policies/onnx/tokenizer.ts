/**
 * The policy's tokenizer: `@huggingface/tokenizers` (pure JS, maintained by Hugging Face) reading
 * the artifact's `tokenizer.json`, so the ids are the ones the trainer's Python tokenizer makes
 * from the same file (checked by test/policies/onnx-policy.slow.test.ts). Chosen over
 * `@huggingface/transformers` (pins a second onnxruntime) and the Rust `tokenizers` binding
 * (native prebuilds per platform).
 */
import { Tokenizer } from '@huggingface/tokenizers';
import type { PolicyArtifact } from './artifact.js';

/** Qwen2.5-Instruct's end-of-turn token: generation stops there (docs/spa-prompts.md#conversation). */
const IM_END = '<|im_end|>';

/** Encode/decode for one artifact, plus the ids that end a generation. */
export class PolicyTokenizer {
  private readonly tokenizer: Tokenizer;
  /** Ids that end a continuation and are not part of it: `<|im_end|>` and the eos ids. */
  readonly stopIds: ReadonlySet<number>;

  constructor(
    artifact: Pick<PolicyArtifact, 'tokenizerJson' | 'tokenizerConfig' | 'manifest' | 'generationEosIds'>,
  ) {
    this.tokenizer = new Tokenizer(artifact.tokenizerJson, artifact.tokenizerConfig);
    const ids = new Set<number>(artifact.generationEosIds);
    if (artifact.manifest.eos_token_id !== null) ids.add(artifact.manifest.eos_token_id);
    const imEnd = this.tokenizer.token_to_id(IM_END);
    if (imEnd !== undefined) ids.add(imEnd);
    if (ids.size === 0) {
      throw new Error(
        'tokenizer has no <|im_end|> token and the manifest no eos_token_id: nothing could stop a turn',
      );
    }
    this.stopIds = ids;
  }

  /**
   * Ids of `text` as the model saw it in training: special tokens written in the text
   * (`<|im_start|>`…) become their single ids; nothing (no BOS) is added.
   */
  encode(text: string): number[] {
    return this.tokenizer.encode(text, { add_special_tokens: false }).ids;
  }

  /**
   * Text of `ids`. Special tokens are dropped by default, as vLLM's `skip_special_tokens=True`;
   * `keepSpecialTokens` keeps them (a prompt then decodes back to itself).
   */
  decode(ids: readonly number[], options: { keepSpecialTokens?: boolean } = {}): string {
    // @huggingface/tokenizers refuses an empty id list; an empty continuation decodes to ''.
    if (ids.length === 0) return '';
    return this.tokenizer.decode(ids as number[], {
      skip_special_tokens: !options.keepSpecialTokens,
      clean_up_tokenization_spaces: false,
    });
  }
}
