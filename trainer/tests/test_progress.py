"""Progress lines of the phases without step lines (issue 43: after SFT's last step the held-out
metrics once ran ten silent minutes on a busy machine; exports are silent too)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, PreTrainedTokenizerBase

from spa_trainer.data.sft_rows import SftRow
from spa_trainer.progress import PhaseProgress, StepsLeft, heartbeat
from spa_trainer.sft.config import SftConfig
from spa_trainer.sft.masking import encode_faithful
from spa_trainer.sft.metrics import evaluate

from .synthetic import sokoban_rows


def test_a_phase_prints_counts_and_time_left_once_its_interval_passed(capsys: pytest.CaptureFixture[str]) -> None:
    now = [0.0]
    progress = PhaseProgress("sft", "held-out metrics (exact match)", 96, every=10.0, clock=lambda: now[0])
    now[0] = 5.0
    progress.count(10)  # 5 s since the phase began: no line yet
    now[0] = 12.0
    progress.count(24)
    now[0] = 15.0
    progress.count(30)  # 3 s since the last line
    assert capsys.readouterr().out.splitlines() == [
        "[sft] held-out metrics (exact match): 24/96 rows, 12 s, about 36 s left"
    ]


def test_the_held_out_metrics_print_progress_as_they_go(
    tiny_dir: Path, tiny_tokenizer: PreTrainedTokenizerBase, capsys: pytest.CaptureFixture[str]
) -> None:
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    rows = [SftRow.from_dict(raw) for raw in sokoban_rows(4)]
    # every=0: a line for each row, as a slow machine gets one every ten seconds
    evaluate(model, tiny_tokenizer, rows, lambda r: encode_faithful(tiny_tokenizer, r), 2, window=300, every=0)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "[sft] held-out metrics on 4 rows (greedy decoding on up to 2)"
    parts = {
        m.group(1): m.group(2)
        for line in lines
        if (m := re.match(r"\[sft\] held-out metrics \((.+)\): (\S+) rows", line))
    }
    assert set(parts) == {"val loss", "state perplexity", "exact match", "observation copy", "action probe"}
    assert parts["val loss"] == "3/4" and parts["exact match"] == "2/2"


def test_a_heartbeat_says_a_phase_is_still_running(capsys: pytest.CaptureFixture[str]) -> None:
    with heartbeat("export", "exporting v1", every=0.05):
        time.sleep(0.3)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) >= 2 and all(
        re.fullmatch(r"\[export\] exporting v1: still running, \d+ s", line) for line in lines
    )
    time.sleep(0.2)
    assert capsys.readouterr().out == ""  # none after the block


def test_encoding_the_training_rows_prints_progress(
    tiny_tokenizer: PreTrainedTokenizerBase, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from spa_trainer.data.sft_rows import SourcedRow
    from spa_trainer.sft import train

    rows = [SourcedRow(0, i, SftRow.from_dict(raw)) for i, raw in enumerate(sokoban_rows(3))]
    encode = train.make_rows_encoder(SftConfig(), tiny_tokenizer)
    quiet = train.encode_rows(rows, encode)
    assert capsys.readouterr().out == ""
    # every=0: a line for each chunk, as the default warm-up's 21,000 rows get one every ten seconds
    monkeypatch.setattr(train, "PhaseProgress", lambda *a, **k: PhaseProgress(*a, **k, every=0))
    counted = train.encode_rows(rows, encode, progress=True, chunk=2)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(", ")[0] for line in lines] == [f"[sft] encoding the training rows: {n}/3 rows" for n in (2, 3)]
    assert [(e.input_ids.tolist(), e.labels.tolist()) for _, e in counted] == [
        (e.input_ids.tolist(), e.labels.tolist()) for _, e in quiet
    ]


def test_step_lines_end_with_the_time_left_at_this_attempts_pace() -> None:
    # issue 44: a 5,172-step warm-up at 2 s a step says it takes hours from its first steps
    left = StepsLeft(start=0, end=5172, started_at=100.0)
    assert left.text(0, now=100.0) == ""  # no step done: no pace yet
    assert left.text(10, now=120.0) == ", about 2.9 h left"  # 2 s a step, 5162 steps left
    assert left.text(60, now=160.0) == ", about 85.2 min left"  # 1 s a step, 5112 left
    assert left.text(5172, now=10_000.0) == ""  # done
    resumed = StepsLeft(start=100, end=200, started_at=0.0)
    assert resumed.text(150, now=50.0) == ", about 50 s left"  # 50 steps in 50 s, 50 left
    assert StepsLeft(0, 100, started_at=0.0).text(10, now=20.0) == ", about 3.0 min left"
