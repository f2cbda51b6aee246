from __future__ import annotations

import json
from pathlib import Path

import pytest

from spa_trainer.experiments import world_model_probe
from spa_trainer.ppo.step import format_valid_turns

from .synthetic import sokoban_rows


def test_probe_scores_every_model_on_the_same_held_out_rows(
    tmp_path: Path, tiny_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in sokoban_rows(12)))
    # every puzzle held out: the probe reads the SFT trainer's split with this share
    world_model_probe.main(
        ["--input", f"jsonl:{rows}", "--model", str(tiny_dir), "--model", str(tiny_dir), "--val-fraction", "1",
         "--rows", "3", "--window", "512"]
    )  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert out["rows"] == 3
    assert list(out["models"]) == [str(tiny_dir)]  # one entry per distinct model
    scores = out["models"][str(tiny_dir)]
    # a model from random weights copies no board and predicts no state
    assert scores["next_state_exact_match"] == 0.0
    assert scores["observation_copy_exact_match"] == 0.0
    assert scores["exact_match_rows"] == 3
    # these rows' thoughts name no action: no row to probe, so no number (strict JSON: null)
    assert scores["action_probe_rows"] == 0 and scores["action_board_mi"] is None


def test_probe_refuses_a_source_without_held_out_rows(tmp_path: Path, tiny_dir: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in sokoban_rows(2)))
    with pytest.raises(SystemExit, match="no held-out rows"):
        world_model_probe.main(["--input", f"jsonl:{rows}", "--model", str(tiny_dir), "--val-fraction", "0"])


def test_format_valid_turns_counts_penalised_turns() -> None:
    records = [
        {"num_turns": 5, "penalty": -0.2, "turn_rewards": [0.0] * 5},
        {"num_turns": 3, "penalty": 0.0, "turn_rewards": [0.0] * 3},
    ]
    assert format_valid_turns(records) == pytest.approx(1 - 2 / 8)
    assert format_valid_turns([]) == 1.0
