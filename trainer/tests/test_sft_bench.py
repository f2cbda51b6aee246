"""The pure helpers of bench/python/sft_bench.py (`npm run bench -- trainer`): nothing timed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
from transformers import PreTrainedTokenizerBase

from spa_trainer.sft.masking import encode_faithful
from tests.spa_rows import row

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "python" / "sft_bench.py"


def load_bench() -> Any:
    spec = importlib.util.spec_from_file_location("sft_bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["sft_bench"] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_tokens_per_s_leaves_out_the_warm_up_steps() -> None:
    bench = load_bench()
    # steps end at 10, 11, 13, 14 s: after a warm-up of 1, steps 2-4 (600 tokens) took 4 s
    assert bench.steady_tokens_per_s([10.0, 11.0, 13.0, 14.0], [999, 100, 200, 300], 1) == 150.0
    assert bench.steady_tokens_per_s([10.0, 11.0, 13.0, 14.0], [999, 100, 200, 300], 2) == 500 / 3
    with pytest.raises(ValueError, match="needs at least 4 steps"):
        bench.steady_tokens_per_s([1.0, 2.0, 3.0], [1, 1, 1], 3)
    with pytest.raises(ValueError, match="3 step times but 2"):
        bench.steady_tokens_per_s([1.0, 2.0, 3.0], [1, 1], 1)


def test_trl_rows_are_spas_prompt_and_target_in_spas_order(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    bench = load_bench()
    rows = [row(t) for t in range(3)]
    order = bench.spa_order(len(rows), seed=0)
    assert sorted(order) == [0, 1, 2]
    out = bench.trl_dataset(tiny_tokenizer, rows, order)
    for pair, i in zip(out, order):
        assert pair["prompt"].endswith("<|im_start|>assistant\n<think>")
        assert pair["completion"] == rows[i].response.removeprefix("<think>") + "<|im_end|>"
        # TRL tokenizes prompt + completion as one string and trains the part after the prompt's
        # ids: that must be spa's ids, with spa's trained tokens exactly the completion's
        ours = encode_faithful(tiny_tokenizer, rows[i], max_length=10**6)
        prompt_ids = tiny_tokenizer(pair["prompt"], add_special_tokens=False)["input_ids"]
        assert (
            tiny_tokenizer(pair["prompt"] + pair["completion"], add_special_tokens=False)["input_ids"] == ours.input_ids
        )
        assert ours.labels == [-100] * len(prompt_ids) + ours.input_ids[len(prompt_ids) :]
