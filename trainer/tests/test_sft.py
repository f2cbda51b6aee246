"""SFT loop on tiny data: the loss falls, metrics come out, a crash-and-resume is exact."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from spa_trainer.checkpoint import latest_checkpoint
from spa_trainer.data import SourcedRow
from spa_trainer.masking import OBS_PLACEHOLDER
from spa_trainer.sft import SftConfig, is_held_out, run_sft

from .synthetic import sokoban_rows, write_jsonl


class Crash(RuntimeError):
    """Stands in for a killed process."""


def _config(tmp_path: Path, rows: int, **overrides: object) -> SftConfig:
    data = write_jsonl(tmp_path / "rows.jsonl", sokoban_rows(rows))
    base = {"input": f"jsonl:{data}", "out": str(tmp_path / "run"), "epochs": 2, "batch_size": 2, "eval_rows": 2}
    return SftConfig(**{**base, **overrides})  # type: ignore[arg-type]


def test_loss_decreases_and_metrics_are_reported(tmp_path: Path) -> None:
    losses: list[float] = []
    cfg = _config(tmp_path, 6, lr=3e-3, epochs=3, val_fraction=0.2)
    metrics = run_sft(cfg, on_step=lambda _s, _r, loss: losses.append(loss))
    assert len(losses) >= 6
    assert sum(losses[-2:]) / 2 < losses[0] - 0.5, losses
    assert math.isfinite(float(metrics["val_loss"]))  # type: ignore[arg-type]
    assert math.isfinite(float(metrics["observation_ppl"]))  # type: ignore[arg-type]
    assert metrics["exact_match_rows"] >= 1
    assert (Path(cfg.out) / "metrics.json").is_file()


def _trained(log: list[tuple[int, list[tuple[int, int]]]]) -> list[tuple[int, int]]:
    return [pos for _step, positions in log for pos in positions]


def test_crash_and_resume_neither_skips_nor_repeats(tmp_path: Path) -> None:
    settings = {"epochs": 2, "checkpoint_every": 2, "eval_rows": 0, "val_fraction": 0.25}
    # reference run, uninterrupted
    full: list[tuple[int, list[tuple[int, int]]]] = []
    (tmp_path / "a").mkdir()
    ref_cfg = _config(tmp_path / "a", 10, **settings)
    run_sft(ref_cfg, on_step=lambda s, rows, _l: full.append((s, [(r.partition, r.offset) for r in rows])))

    # interrupted run: dies inside step 5, after the step-4 checkpoint
    (tmp_path / "b").mkdir()
    cfg = _config(tmp_path / "b", 10, **settings)
    committed: list[tuple[int, list[tuple[int, int]]]] = []

    def dying(step: int, rows: list[SourcedRow], _loss: float) -> None:
        if step == 5:
            raise Crash()
        committed.append((step, [(r.partition, r.offset) for r in rows]))

    with pytest.raises(Crash):
        run_sft(cfg, on_step=dying)
    assert latest_checkpoint(Path(cfg.out)).name == "step_00000004"  # type: ignore[union-attr]
    run_sft(cfg, on_step=lambda s, rows, _l: committed.append((s, [(r.partition, r.offset) for r in rows])))

    assert [s for s, _ in committed] == [s for s, _ in full]
    assert _trained(committed) == _trained(full)
    per_epoch = len(_trained(full)) // 2
    assert len(set(_trained(full)[:per_epoch])) == per_epoch  # every train row once per epoch
    a = load_file(str(latest_checkpoint(Path(ref_cfg.out)) / "model" / "model.safetensors"))  # type: ignore[operator]
    b = load_file(str(latest_checkpoint(Path(cfg.out)) / "model" / "model.safetensors"))  # type: ignore[operator]
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_released_masking_run_adds_placeholders_once(tmp_path: Path) -> None:
    cfg = _config(tmp_path, 4, released_masking=True, max_steps=1, eval_rows=0)
    run_sft(cfg)
    cfg.max_steps = 2
    run_sft(cfg)  # resumes from the checkpoint whose tokenizer already has the placeholders
    folder = latest_checkpoint(Path(cfg.out))
    assert folder is not None and folder.name == "step_00000002"
    vocab = (folder / "model" / "tokenizer.json").read_text(encoding="utf-8")
    assert vocab.count(f'"content": "{OBS_PLACEHOLDER}"') == 1


def test_held_out_split_is_by_trajectory() -> None:
    from spa_trainer.data import SftRow

    rows = [SftRow.from_dict(r) for r in sokoban_rows(40)]
    held = [is_held_out(r, 0.25) for r in rows]
    assert 0 < sum(held) < len(rows)
    twin = SftRow.from_dict({**sokoban_rows(1)[0], "turn": 2})
    assert is_held_out(twin, 0.25) == held[0]


def test_cli_trains_and_exports(tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    data = write_jsonl(tmp_path / "rows.jsonl", sokoban_rows(3))
    cmd = [
        sys.executable,
        "-m",
        "spa_trainer.sft",
        "--model",
        "tiny",
        "--input",
        f"jsonl:{data}",
        "--out",
        str(tmp_path / "run"),
        "--epochs",
        "1",
        "--batch-size",
        "2",
        "--val-fraction",
        "0",
        "--eval-rows",
        "0",
        "--export",
        str(tmp_path / "artifacts"),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    assert "[sft] epoch 0 step 2/2 loss" in done.stdout
    manifest = json.loads((tmp_path / "artifacts" / "v000001" / "manifest.json").read_text())
    assert manifest["stage"] == "sft" and manifest["step"] == 2
