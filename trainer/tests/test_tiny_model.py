"""The tiny tokenizer and model: deterministic build, exact round trips, Qwen's chat format."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from transformers import AutoModelForCausalLM, PreTrainedTokenizerBase

from spa_trainer.models.qwen_template import SPA_TAG_TOKENS
from spa_trainer.models.tiny import TinySpec, train_tiny_tokenizer

from .spa_rows import RESPONSE_1, S2, USER_1

_HASH = (
    "from spa_trainer.models.tiny import train_tiny_tokenizer as t; import hashlib; "
    "print(hashlib.sha256(t().to_str().encode()).hexdigest())"
)


def test_tokenizer_is_byte_identical_across_builds_and_processes() -> None:
    here = hashlib.sha256(train_tiny_tokenizer().to_str().encode()).hexdigest()
    again = hashlib.sha256(train_tiny_tokenizer().to_str().encode()).hexdigest()
    other = subprocess.run(
        [sys.executable, "-c", _HASH],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    ).stdout.strip()
    assert here == again == other


def test_round_trip_is_exact(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    for text in (S2, USER_1, RESPONSE_1, "√ – → \n\n  trailing space ", "Reward:\n-0.30000000000000004\n"):
        ids = tiny_tokenizer(text, add_special_tokens=False)["input_ids"]
        assert tiny_tokenizer.decode(ids) == text


def test_grid_cell_tokens_give_one_token_per_cell_and_keep_prose_whole() -> None:
    cells = train_tiny_tokenizer(TinySpec(grid_cell_tokens=True))
    plain = train_tiny_tokenizer()
    grid = "######\n#_PX√#\n#O_S_#\n######"
    pieces = cells.encode(grid).tokens
    assert len(pieces) == 4 * 6 + 3  # 24 cells, 3 newlines
    assert len(plain.encode(grid).tokens) < len(pieces)  # the shared BPE merges cells into row tokens
    prose = "Player (P) is at (1,2); box (X) is at (1,3)."
    assert cells.encode(prose).tokens == plain.encode(prose).tokens
    for text in (grid, S2, RESPONSE_1):
        assert cells.decode(cells.encode(text).ids) == text


def test_spa_tags_and_qwen_tokens_are_single_tokens(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    for tag in (*SPA_TAG_TOKENS, "<|im_start|>", "<|im_end|>", "<|endoftext|>"):
        assert len(tiny_tokenizer(tag, add_special_tokens=False)["input_ids"]) == 1, tag
    assert tiny_tokenizer.eos_token == "<|im_end|>"
    assert 600 <= len(tiny_tokenizer) <= 2048
    # tags survive skip_special_tokens (the TS generator decodes continuations that way)
    ids = tiny_tokenizer("<think> <observation>x</observation><|im_end|>", add_special_tokens=False)["input_ids"]
    assert tiny_tokenizer.decode(ids, skip_special_tokens=True) == "<think> <observation>x</observation>"


def test_chat_template_is_qwen25(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    messages = [{"role": "system", "content": "You're a helpful assistant. "}, {"role": "user", "content": "hi"}]
    text = tiny_tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert (
        text
        == "<|im_start|>system\nYou're a helpful assistant. <|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    )
    default = tiny_tokenizer.apply_chat_template(messages[1:], tokenize=False)
    assert isinstance(default, str) and default.startswith(
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud."
    )


def test_model_is_a_small_qwen2_with_safetensors(tiny_dir: Path, tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    assert (tiny_dir / "model.safetensors").is_file() and not list(tiny_dir.glob("*.bin"))
    model = AutoModelForCausalLM.from_pretrained(tiny_dir, use_safetensors=True)
    assert model.config.model_type == "qwen2"
    assert model.config.vocab_size == len(tiny_tokenizer)
    assert model.config.eos_token_id == tiny_tokenizer.eos_token_id
    assert sum(p.numel() for p in model.parameters()) < 1_000_000


def test_the_ts_tests_render_the_tiny_models_chat_template() -> None:
    """test/protocol/conversation.test.ts renders SPA's prompts with a copy of this template."""
    from pathlib import Path

    from spa_trainer.models.qwen_template import QWEN25_CHAT_TEMPLATE

    copy = Path(__file__).resolve().parents[2] / "test/protocol/fixtures/qwen2.5-instruct.chat_template.jinja"
    assert copy.read_text(encoding="utf-8") == QWEN25_CHAT_TEMPLATE
