"""Decision weights (docs/spa-sft.md#weights): target tokens outside the state contents weigh W in each
row's loss, the states 1; W = 1 is the plain mean, exactly as before."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from spa_trainer.models.load import load_policy
from spa_trainer.sft.config import SftConfig, parse_args
from spa_trainer.sft.masking import (
    IGNORE_INDEX,
    Example,
    encode_faithful,
    encode_released,
    faithful_texts,
    observation_spans,
    prediction_spans,
)
from spa_trainer.sft.metrics import validation_loss
from spa_trainer.sft.train import Encoded, make_encoder, row_losses, run_sft

from .json_schema import problems
from .spa_rows import S1, S2, row
from .synthetic import sokoban_rows, write_jsonl
from .test_trainer_files import TRAINER_FILES

CPU = torch.device("cpu")


class _TableLM(torch.nn.Module):
    """A stand-in causal LM whose logits at position t are row t of a fixed table (whatever the input)."""

    def __init__(self, table: torch.Tensor) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(table, requires_grad=False)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        logits_to_keep: torch.Tensor | int = 0,
        labels: torch.Tensor | None = None,
    ) -> object:
        logits = self.table[: input_ids.shape[1]].unsqueeze(0).expand(input_ids.shape[0], -1, -1)
        if isinstance(logits_to_keep, torch.Tensor):
            logits = logits[:, logits_to_keep]
        return type("Out", (), {"logits": logits})()


def test_weighted_row_loss_on_a_hand_example() -> None:
    # 5 tokens: 2 prompt, 3 targets; the targets are predicted at positions 1, 2, 3
    table = torch.tensor(
        [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]], dtype=torch.float32
    )
    ids = [1, 2, 0, 1, 0]
    labels = [IGNORE_INDEX, IGNORE_INDEX, 0, 1, 0]
    weights = [1.0, 1.0, 4.0, 1.0, 2.0]
    nll = [-float(torch.log_softmax(table[t], 0)[labels[t + 1]]) for t in (1, 2, 3)]
    expected = (4.0 * nll[0] + 1.0 * nll[1] + 2.0 * nll[2]) / 7.0
    plain = sum(nll) / 3
    assert abs(expected - plain) > 0.1  # the weights matter here
    model = _TableLM(table)
    got = row_losses(model, [Encoded.of(Example(ids, labels, weights))], CPU)
    assert float(got[0]) == pytest.approx(expected, rel=1e-6)
    assert float(row_losses(model, [Encoded.of(Example(ids, labels))], CPU)[0]) == pytest.approx(plain, rel=1e-6)
    # padded beside a longer unweighted row (weights 1 for it), each row keeps its own loss
    longer = Example([1, 2, 0, 1, 0], [IGNORE_INDEX, 0, 0, 1, 0])
    both = row_losses(model, [Encoded.of(Example(ids[:4], labels[:4], weights[:4])), Encoded.of(longer)], CPU)
    only = row_losses(model, [Encoded.of(longer)], CPU)
    assert float(both[0]) == pytest.approx((4.0 * nll[0] + nll[1]) / 5.0, rel=1e-6)
    assert float(both[1]) == pytest.approx(float(only[0]), rel=1e-6)
    # validation reports the same objective
    pm = cast(PreTrainedModel, model)
    assert validation_loss(pm, [Example(ids, labels, weights)]) == pytest.approx(expected, rel=1e-6)


def test_weights_mark_the_state_contents(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    ex = encode_faithful(tiny_tokenizer, row(2), decision_weight=5.0)
    assert ex.weights is not None and len(ex.weights) == len(ex.input_ids)
    _prompt, target = faithful_texts(tiny_tokenizer, row(2))
    targets = [(t, w) for t, label, w in zip(ex.input_ids, ex.labels, ex.weights) if label != IGNORE_INDEX]
    state = tiny_tokenizer.decode([t for t, w in targets if w == 1.0])
    decision = tiny_tokenizer.decode([t for t, w in targets if w == 5.0])
    assert state == S1 + S2 and {w for _, w in targets} == {1.0, 5.0}
    assert decision == (
        " <observation></observation> Push the box up onto the target. "
        "<prediction></prediction></think><answer>Up</answer><|im_end|>"
    )
    assert len(observation_spans(target)) == len(prediction_spans(target)) == 1
    # cut on the left with the ids
    cut = encode_faithful(tiny_tokenizer, row(2), max_length=200, decision_weight=5.0)
    assert cut.weights == ex.weights[-200:] and cut.labels == ex.labels[-200:]


def test_weight_one_is_todays_encoding_and_losses(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    model, _tok, _ = load_policy("tiny", CPU)
    rows = [row(1), row(2)]
    for mask in ("none", "transitions", "predictions"):
        today = [encode_faithful(tiny_tokenizer, r, mask=mask) for r in rows]
        assert [encode_faithful(tiny_tokenizer, r, mask=mask, decision_weight=1.0) for r in rows] == today
        assert all(ex.weights is None for ex in today)
        ones = [replace(ex, weights=[1.0] * len(ex.input_ids)) for ex in today]
        with torch.no_grad():
            plain = row_losses(model, [Encoded.of(ex) for ex in today], CPU)
            weighted = row_losses(model, [Encoded.of(ex) for ex in ones], CPU)
        assert torch.equal(plain, weighted)  # Σ 1·nll / Σ 1 is the plain mean, bit for bit
        assert validation_loss(model, ones) == pytest.approx(validation_loss(model, today), rel=1e-6)
    encoder = make_encoder(SftConfig(), tiny_tokenizer)
    assert encoder(row(2)) == encode_faithful(tiny_tokenizer, row(2))


def test_weights_under_the_masking_ablations(tiny_tokenizer: PreTrainedTokenizerBase) -> None:
    model, _tok, _ = load_policy("tiny", CPU)
    # both states masked: every trained token is a decision token, so the weighted mean is the plain one
    masked = encode_faithful(tiny_tokenizer, row(2), mask="transitions", decision_weight=3.0)
    trained_weights = {w for label, w in zip(masked.labels, masked.weights or []) if label != IGNORE_INDEX}
    assert trained_weights == {3.0}
    plain = replace(masked, weights=None)
    with torch.no_grad():
        a, b = row_losses(model, [Encoded.of(masked), Encoded.of(plain)], CPU)
    assert float(a) == pytest.approx(float(b), rel=1e-5)
    # next state masked: the current state still trains, weighing 1
    preds = encode_faithful(tiny_tokenizer, row(2), mask="predictions", decision_weight=3.0)
    ones = [t for t, label, w in zip(preds.input_ids, preds.labels, preds.weights or []) if label != -100 and w == 1]
    assert tiny_tokenizer.decode(ones) == S1
    # the configured encoder passes the weight; released masking has no state contents and no weights
    cfg = SftConfig(decision_weight=3.0, mask_predictions=True)
    assert make_encoder(cfg, tiny_tokenizer)(row(2)) == preds
    assert encode_released(tiny_tokenizer, row(2)).weights is None


def test_decision_weight_flag(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--input", "jsonl:rows.jsonl"]
    assert parse_args(base).decision_weight == 1.0
    assert parse_args([*base, "--decision-weight", "2.5"]).decision_weight == 2.5
    for bad in ("0", "-1", "nan", "inf", "heavy"):
        with pytest.raises(SystemExit):
            parse_args([*base, "--decision-weight", bad])
        assert f"--decision-weight must be a number with 0 < x ≤ 1000, got {bad}" in capsys.readouterr().err
    with pytest.raises(ValueError, match="decision_weight must be a finite number > 0"):
        run_sft(SftConfig(input="jsonl:nowhere.jsonl", decision_weight=0.0))


def test_a_weighted_run_trains_and_reports(tmp_path: Path) -> None:
    raws = sokoban_rows(6)
    for i, raw in enumerate(raws):
        raw["response"] = str(raw["response"]).replace("The wall blocks me.", f"Action: {['Up', 'Left'][i % 2]}.")
    data = write_jsonl(tmp_path / "rows.jsonl", raws)
    losses: list[float] = []
    cfg = SftConfig(input=f"jsonl:{data}", out=str(tmp_path / "run"), epochs=2, batch_size=2, eval_rows=2)
    metrics = run_sft(replace(cfg, decision_weight=4.0, lr=3e-3), on_step=lambda _s, _r, x: losses.append(x))
    assert all(math.isfinite(x) for x in losses) and len(losses) >= 4
    written = json.loads((Path(cfg.out) / "metrics.json").read_text())
    assert written["decision_weight"] == 4.0 and written == json.loads(json.dumps(written))
    assert problems(written, TRAINER_FILES["sft-metrics"]) == []  # the file spa run reads
    val_loss = metrics["val_loss"]
    assert isinstance(val_loss, float) and math.isfinite(val_loss)
    for key in (
        "observation_copy_exact_match",
        "observation_copy_rows",
        "observation_copy_first_turn_exact_match",
        "observation_copy_first_turn_rows",
        "observation_copy_later_turn_exact_match",
        "observation_copy_later_turn_rows",
        "action_board_mi",
        "action_demonstrated_prob",
        "action_probe_rows",
    ):
        assert key in written, key
    assert written["observation_copy_rows"] == written["observation_copy_first_turn_rows"] >= 1
    assert (
        written["observation_copy_later_turn_rows"] == 0 and written["observation_copy_later_turn_exact_match"] is None
    )
    assert written["action_probe_rows"] == written["val_rows"] >= 1
    assert 0.0 <= written["action_board_mi"] <= math.log(4) + 1e-9
    assert 0.0 < written["action_demonstrated_prob"] < 1.0
