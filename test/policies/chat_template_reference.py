"""Python side of test/policies/chat-template.slow.test.ts (run with trainer/.venv's python).

Writes two tokenizer folders into argv[1] and prints, for the conversations read on stdin,
`tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=...)` of each:

- `tiny`: the project's tiny model (Qwen2.5-Instruct's template), as `spa_trainer` builds it;
- `headers`: the same vocabulary with Llama-3-style role headers, a BOS token and `<|eot_id|>`,
  a template unlike Qwen's in every respect the renderer must follow (bos_token, trim, no
  default system message, a different generation prompt).
"""

import json
import sys
from pathlib import Path

from transformers import AutoTokenizer

from spa_trainer.models.tiny import tiny_model_dir

HEADERS_TEMPLATE = (
    "{{- bos_token }}"
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)


def main() -> None:
    out = Path(sys.argv[1])
    conversations = json.load(sys.stdin)
    tiny = AutoTokenizer.from_pretrained(tiny_model_dir())
    tiny.save_pretrained(out / "tiny")
    headers = AutoTokenizer.from_pretrained(tiny_model_dir())
    headers.add_special_tokens(
        {
            "bos_token": "<|begin_of_text|>",
            "eos_token": "<|eot_id|>",
            "additional_special_tokens": ["<|start_header_id|>", "<|end_header_id|>"],
        }
    )
    headers.chat_template = HEADERS_TEMPLATE
    headers.save_pretrained(out / "headers")
    renders = {}
    for name in ("tiny", "headers"):
        tokenizer = AutoTokenizer.from_pretrained(out / name)
        renders[name] = [
            tokenizer.apply_chat_template(c["messages"], tokenize=False, add_generation_prompt=c["generation"])
            for c in conversations
        ]
    print(json.dumps(renders, ensure_ascii=False))


main()
