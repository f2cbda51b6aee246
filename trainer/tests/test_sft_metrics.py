"""Held-out metrics see each row through the training window (docs/spa-sft.md#metrics)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, PreTrainedTokenizerBase

from spa_trainer.data.sft_rows import SftRow
from spa_trainer.sft.masking import encode_faithful, faithful_texts, prediction_spans
from spa_trainer.sft.metrics import next_state_exact_match

from .synthetic import sokoban_rows


class _EchoTruth:
    """Stands in for `model.generate`: records the prefix it gets and writes the true next state."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, truth: str) -> None:
        self.prefixes: list[list[int]] = []
        self.answer = tokenizer(truth + "</prediction>", add_special_tokens=False)["input_ids"]

    def __call__(self, input_ids: torch.Tensor, **_kwargs: object) -> torch.Tensor:
        self.prefixes.append(input_ids[0].tolist())
        return torch.cat([input_ids, torch.tensor([self.answer])], dim=1)


def test_exact_match_prefix_is_the_training_windows_prefix(
    tiny_dir: Path, tiny_tokenizer: PreTrainedTokenizerBase, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = SftRow.from_dict(sokoban_rows(1)[0])
    _prompt, target = faithful_texts(tiny_tokenizer, row)
    start, end = prediction_spans(target)[0]
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    echo = _EchoTruth(tiny_tokenizer, target[start:end])
    monkeypatch.setattr(model, "generate", echo)

    full = encode_faithful(tiny_tokenizer, row, max_length=100_000).input_ids
    window = len(full) - 40  # cuts 40 prompt tokens on the left
    for w in (None, window):
        rate, n = next_state_exact_match(model, tiny_tokenizer, [row], window=w)
        assert (rate, n) == (1.0, 1)
    untruncated, windowed = echo.prefixes
    assert len(untruncated) - len(windowed) == 40
    assert windowed == untruncated[40:]
    # the windowed prefix is what training's left-truncated example holds before the state
    trained = encode_faithful(tiny_tokenizer, row, max_length=window).input_ids
    assert trained[: len(windowed)] == windowed
