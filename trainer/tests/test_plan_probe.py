from __future__ import annotations

import json
import math
from pathlib import Path
from typing import cast

import pytest
import torch
from transformers import AutoModelForCausalLM, PreTrainedModel, PreTrainedTokenizerBase

from spa_trainer.data.sft_rows import SftRow
from spa_trainer.experiments.plan_probe import probe, read_rows

from .synthetic import sokoban_rows


def _plan_rows(tmp_path: Path) -> Path:
    """Three base-mode first turns with a plan, one without, one second turn; as `spa tap --json` lines."""
    rows = sokoban_rows(5)
    plans = ["Left, Up", "Down", "Right, Right", None, "Up"]
    lines = []
    for i, (raw, plan) in enumerate(zip(rows, plans, strict=True)):
        answer = "Up" if plan is None else plan.replace(", ", " || ")
        think = "I am not sure." if plan is None else f"Shortest plan: {plan}."
        raw = {**raw, "response": f"<think>{think}</think><answer>{answer}</answer>"}
        if i == 4:  # a later turn: its prompt holds an assistant message
            raw["prompt"] = [*raw["prompt"], {"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}]
        lines.append(json.dumps({"topic": "t", "record": raw}))
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_probe_reads_the_first_planned_action_of_first_turns(
    tmp_path: Path, tiny_dir: Path, tiny_tokenizer: PreTrainedTokenizerBase
) -> None:
    rows = read_rows(str(_plan_rows(tmp_path)), limit=10)
    assert len(rows) == 4  # the later turn is not a first turn
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    result = probe(model, tiny_tokenizer, rows, window=512)
    assert result.rows == 3 and result.oracle == {"Left": 1, "Down": 1, "Right": 1}  # the planless row skipped
    assert sum(result.argmax.values()) == 3 and 0.0 <= result.agreement <= 1.0
    assert 0.0 < result.entropy <= math.log(4) + 1e-6
    with pytest.raises(ValueError, match="no row's response starts with"):
        probe(model, tiny_tokenizer, [SftRow(prompt=rows[0].prompt, response="<think>x</think>")], window=512)


class _Prefers(torch.nn.Module):
    """A stand-in model whose next token is always `token` (logit 20 against 0)."""

    def __init__(self, token: int, vocab: int) -> None:
        super().__init__()
        self.token, self.vocab = token, vocab
        self.device = torch.device("cpu")

    def forward(self, ids: torch.Tensor) -> object:
        logits = torch.zeros(ids.shape[0], ids.shape[1], self.vocab)
        logits[..., self.token] = 20.0
        return type("Out", (), {"logits": logits})()


def test_a_board_blind_model_agrees_only_where_the_oracle_picks_its_action(
    tmp_path: Path, tiny_tokenizer: PreTrainedTokenizerBase
) -> None:
    rows = read_rows(str(_plan_rows(tmp_path)), limit=10)
    left = tiny_tokenizer.encode(" Left", add_special_tokens=False)[0]
    model = cast(PreTrainedModel, _Prefers(left, len(tiny_tokenizer)))
    result = probe(model, tiny_tokenizer, rows, window=512)
    assert result.argmax == {"Left": 3} and result.agreement == pytest.approx(1 / 3)
    assert result.entropy == pytest.approx(0.0, abs=1e-6)
