"""SFT loop on tiny data: the loss falls, metrics come out, epochs reshuffle, a crash-and-resume is exact."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from spa_trainer.data.sft_rows import Message, SftRow, SourcedRow
from spa_trainer.sft.config import SftConfig
from spa_trainer.sft.masking import OBS_PLACEHOLDER
from spa_trainer.sft.sampler import canonical_order, epoch_order, is_held_out, read_range
from spa_trainer.sft.train import run_sft
from spa_trainer.topics.sources import open_source
from spa_trainer.training.checkpoint import latest_checkpoint

from .synthetic import sokoban_rows, write_jsonl


class Crash(RuntimeError):
    """Stands in for a killed process."""


def _config(tmp_path: Path, rows: int, **overrides: object) -> SftConfig:
    data = write_jsonl(tmp_path / "rows.jsonl", sokoban_rows(rows))
    base = SftConfig(input=f"jsonl:{data}", out=str(tmp_path / "run"), epochs=2, batch_size=2, eval_rows=2)
    return replace(base, **overrides)


def _latest(run_dir: str) -> Path:
    """The run's latest checkpoint folder (the run has written one)."""
    folder = latest_checkpoint(Path(run_dir))
    assert folder is not None, run_dir
    return folder


def test_loss_decreases_and_metrics_are_reported(tmp_path: Path) -> None:
    losses: list[float] = []
    cfg = _config(tmp_path, 6, lr=3e-3, epochs=3, val_fraction=0.2)
    metrics = run_sft(cfg, on_step=lambda _s, _r, loss: losses.append(loss))
    assert len(losses) >= 6
    assert sum(losses[-2:]) / 2 < losses[0] - 0.5, losses
    val_loss, observation_ppl, exact_match_rows = (
        metrics[k] for k in ("val_loss", "observation_ppl", "exact_match_rows")
    )
    assert isinstance(val_loss, float) and math.isfinite(val_loss)
    assert isinstance(observation_ppl, float) and math.isfinite(observation_ppl)
    assert isinstance(exact_match_rows, int) and exact_match_rows >= 1
    assert (Path(cfg.out) / "metrics.json").is_file()


def test_micro_batches_train_the_same_losses_and_weights(tmp_path: Path) -> None:
    """Rows of different lengths, 3 to a padded forward pass, against SPA's one at a time."""
    runs: dict[int, list[float]] = {}
    for micro in (1, 3):
        runs[micro] = []
        (tmp_path / f"m{micro}").mkdir()
        cfg = _config(tmp_path / f"m{micro}", 10, batch_size=4, micro_batch_size=micro, epochs=1, lr=3e-3)
        run_sft(cfg, on_step=lambda _s, _r, loss, m=micro: runs[m].append(loss))
    assert len(runs[1]) >= 2
    assert runs[3] == pytest.approx(runs[1], rel=1e-4)
    one, three = (
        load_file(str(_latest(str(tmp_path / f"m{m}" / "run")) / "model" / "model.safetensors")) for m in (1, 3)
    )
    for name, tensor in one.items():
        torch.testing.assert_close(three[name], tensor, rtol=1e-4, atol=1e-5)


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
    assert _latest(cfg.out).name == "step_00000004"
    run_sft(cfg, on_step=lambda s, rows, _l: committed.append((s, [(r.partition, r.offset) for r in rows])))

    assert [s for s, _ in committed] == [s for s, _ in full]
    assert _trained(committed) == _trained(full)
    per_epoch = len(_trained(full)) // 2
    assert len(set(_trained(full)[:per_epoch])) == per_epoch  # every train row once per epoch
    a = load_file(str(_latest(ref_cfg.out) / "model" / "model.safetensors"))
    b = load_file(str(_latest(cfg.out) / "model" / "model.safetensors"))
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_released_masking_run_adds_placeholders_once(tmp_path: Path) -> None:
    cfg = _config(tmp_path, 4, released_masking=True, stop_after_steps=1, eval_rows=0)
    run_sft(cfg)
    cfg.stop_after_steps = 2
    run_sft(cfg)  # resumes from the checkpoint whose tokenizer already has the placeholders
    folder = latest_checkpoint(Path(cfg.out))
    assert folder is not None and folder.name == "step_00000002"
    vocab = (folder / "model" / "tokenizer.json").read_text(encoding="utf-8")
    assert vocab.count(f'"content": "{OBS_PLACEHOLDER}"') == 1


def _second_member(raw: dict[str, object], member: int) -> dict[str, object]:
    """Turn 2 of another trajectory (group member `member`) on the same puzzle as `raw`."""
    messages = raw["prompt"]
    assert isinstance(messages, list)
    prompt = list(messages)
    prompt += [{"role": "assistant", "content": raw["response"]}, {"role": "user", "content": "Reward:\n-0.1\n"}]
    return {**raw, "trajectory_id": f"{raw['trajectory_id']}-member{member}", "turn": 2, "prompt": prompt}


def test_held_out_split_is_by_puzzle() -> None:
    raws = sokoban_rows(40)
    rows = [SftRow.from_dict(r) for r in raws]
    held = [is_held_out(r, 0.5) for r in rows]
    assert 0 < sum(held) < len(rows)
    # every row of every trajectory played on a puzzle lands on that puzzle's side
    for member in (1, 2, 3):
        twins = [SftRow.from_dict(_second_member(r, member)) for r in raws]
        assert [is_held_out(t, 0.5) for t in twins] == held


def _positions(rows: list[SourcedRow]) -> list[tuple[int, int]]:
    return [(r.partition, r.offset) for r in rows]


def test_epochs_visit_the_rows_in_a_seeded_permutation(tmp_path: Path) -> None:
    cfg = _config(tmp_path, 12, epochs=3, val_fraction=0.0, eval_rows=0, seed=7)
    trained: list[tuple[int, int]] = []
    run_sft(cfg, on_step=lambda _s, rows, _l: trained.extend(_positions(rows)))
    train = read_range(open_source(cfg.input), {0: 0}, {0: 12}, 0.0).train
    per_epoch = [trained[e * 12 : (e + 1) * 12] for e in range(3)]
    # epoch e's order is the permutation of seed + e: reproducible from the seed in the checkpoint
    assert per_epoch == [[_positions(train)[i] for i in epoch_order(12, 7, e)] for e in range(3)]
    assert len({tuple(order) for order in per_epoch}) == 3  # a new order every epoch
    assert all(sorted(order) == sorted(_positions(train)) for order in per_epoch)  # each row once per epoch
    assert per_epoch[0] != _positions(train)  # not the log order
    state = json.loads((_latest(cfg.out) / "trainer_state.json").read_text())
    assert state["shuffle_seed"] == 7 and state["epoch"] == 3 and state["epoch_rows"] == 0


def test_rows_are_trained_in_an_order_their_arrival_does_not_change() -> None:
    rows = [
        SftRow(
            prompt=(Message("user", f"p{i % 4}"),),
            response=f"r{i}",
            trajectory_id=f"run/b0/g{i % 4}/m{i // 4}",
            turn=i % 3,
        )
        for i in range(24)
    ]
    arrived = [SourcedRow(0, i, row) for i, row in enumerate(rows)]
    shuffled = [SourcedRow(i % 2, i, row) for i, row in enumerate(random.Random(1).sample(rows, len(rows)))]
    first, second = (canonical_order(a, lambda s: s.row) for a in (arrived, shuffled))
    assert [s.row for s in first] == [s.row for s in second]
    assert [s.row for s in first] != rows  # spread, not the first trajectories first
    renamed = [replace(row, trajectory_id=row.trajectory_id.replace("run/", "other-run/")) for row in rows]
    assert canonical_order(renamed, lambda r: r) == [
        replace(s.row, trajectory_id=s.row.trajectory_id.replace("run/", "other-run/")) for s in first
    ]
    plain = [SourcedRow(0, i, SftRow(prompt=(Message("user", "p"),), response=str(i), turn=5 - i)) for i in range(5)]
    assert canonical_order(plain, lambda s: s.row) == plain  # no trajectory ids: the log order


def test_epoch_order_is_reproducible_from_the_seed() -> None:
    assert epoch_order(50, 3, 1) == epoch_order(50, 3, 1)
    assert sorted(epoch_order(50, 3, 1)) == list(range(50))
    assert epoch_order(50, 3, 1) != epoch_order(50, 3, 2) != epoch_order(50, 4, 2)


def test_a_crash_mid_epoch_resumes_the_same_permutation(tmp_path: Path) -> None:
    settings = {"epochs": 2, "checkpoint_every": 1, "eval_rows": 0, "val_fraction": 0.0, "seed": 5}
    (tmp_path / "a").mkdir()
    ref_cfg = _config(tmp_path / "a", 12, **settings)
    full: list[tuple[int, list[tuple[int, int]]]] = []
    run_sft(ref_cfg, on_step=lambda s, rows, _l: full.append((s, _positions(rows))))

    (tmp_path / "b").mkdir()
    cfg = _config(tmp_path / "b", 12, **settings)
    log: list[tuple[int, list[tuple[int, int]]]] = []

    def dying(step: int, rows: list[SourcedRow], _loss: float) -> None:
        if step == 4:  # epoch 0 has 6 steps: die in the middle of it, after the step-3 checkpoint
            raise Crash()
        log.append((step, _positions(rows)))

    with pytest.raises(Crash):
        run_sft(cfg, on_step=dying)
    state = json.loads((_latest(cfg.out) / "trainer_state.json").read_text())
    assert (state["step"], state["epoch"], state["epoch_rows"], state["shuffle_seed"]) == (3, 0, 6, 5)
    cfg.seed = 99  # the permutation's seed comes from the checkpoint, not from the resumed command
    run_sft(cfg, on_step=lambda s, rows, _l: log.append((s, _positions(rows))))

    assert log == full
    assert _trained(full)[:12] != sorted(_trained(full)[:12])  # shuffled, not log order
    a = load_file(str(_latest(ref_cfg.out) / "model" / "model.safetensors"))
    b = load_file(str(_latest(cfg.out) / "model" / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_checkpoint_from_before_the_canonical_order_resumes_its_log_order(tmp_path: Path) -> None:
    cfg = _config(tmp_path, 12, epochs=1, checkpoint_every=1, eval_rows=0, val_fraction=0.0, seed=5)
    trained: list[tuple[int, int]] = []

    def dying(step: int, rows: list[SourcedRow], _loss: float) -> None:
        if step == 4:  # after the step-3 checkpoint: 6 of the epoch's 12 rows trained
            raise Crash()
        trained.extend(_positions(rows))

    with pytest.raises(Crash):
        run_sft(cfg, on_step=dying)
    state_file = _latest(cfg.out) / "trainer_state.json"
    state = json.loads(state_file.read_text())
    assert state["row_order"] == "content"
    del state["row_order"]  # as a checkpoint written before the canonical order
    state_file.write_text(json.dumps(state))
    run_sft(cfg, on_step=lambda _s, rows, _l: trained.extend(_positions(rows)))
    log_order = [(0, offset) for offset in range(12)]
    assert trained[6:] == [log_order[i] for i in epoch_order(12, 5, 0)][6:]


def test_stop_after_steps_is_an_interruption(tmp_path: Path) -> None:
    cfg = _config(tmp_path, 6, stop_after_steps=1, val_fraction=0.0, eval_rows=0, export=str(tmp_path / "art"))
    assert run_sft(cfg) == {"finished": False, "step": 1, "epoch": 0, "rows_trained": 2}
    assert json.loads((Path(cfg.out) / "metrics.json").read_text())["finished"] is False
    assert not (tmp_path / "art").exists()  # nothing exported


def _strict_json(text: str) -> object:
    def refuse(name: str) -> object:
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def test_cli_max_steps_is_a_budget_that_exports(tmp_path: Path) -> None:
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
        "2",
        "--batch-size",
        "2",
        "--max-steps",
        "3",
        "--val-fraction",
        "0",
        "--eval-rows",
        "0",
        "--export",
        str(tmp_path / "artifacts"),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    assert "[sft] epoch 1 step 3/3 loss" in done.stdout  # 2 steps an epoch: the budget ends inside epoch 1
    manifest = json.loads((tmp_path / "artifacts" / "v000001" / "manifest.json").read_text())
    assert manifest["stage"] == "sft" and manifest["step"] == 3
    # metrics.json is strict JSON: no held-out rows, so the metrics are null, not NaN
    metrics = _strict_json((tmp_path / "run" / "metrics.json").read_text())
    assert isinstance(metrics, dict)
    assert metrics["finished"] is True and metrics["step"] == 3 and metrics["val_loss"] is None
    assert metrics["exported_version"] == 1 and metrics["artifact"] == str(tmp_path / "artifacts" / "v000001")

    # The same command again: the weights did not change, so no second version appears.
    again = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parents[1])
    assert again.returncode == 0, again.stderr[-2000:]
    assert "not exporting again" in again.stdout
    assert sorted(p.name for p in (tmp_path / "artifacts").iterdir()) == ["v000001"]
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["exported_version"] == 1


def test_progress_is_a_line_every_log_every_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = _config(tmp_path, 8, epochs=3, log_every=5)
    run_sft(cfg)
    steps = [line for line in capsys.readouterr().out.splitlines() if " step " in line and " loss " in line]
    # 8 rows, 20 % held out by puzzle, batches of 2 over 3 epochs: every 5th step, the first and the last.
    numbers = [int(line.split(" step ")[1].split("/")[0]) for line in steps]
    last = int(steps[-1].split("/")[1].split()[0])
    assert numbers == sorted({1, last, *range(5, last + 1, 5)}), steps


def test_cli_errors_are_one_line_and_bad_rows_can_be_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from spa_trainer.sft.train import main

    missing = ["--model", "tiny", "--input", f"jsonl:{tmp_path / 'none.jsonl'}", "--out", str(tmp_path / "a")]
    assert main(missing) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("[sft] error: SFT input") and "\n" not in err

    data = write_jsonl(tmp_path / "rows.jsonl", sokoban_rows(4))
    lines = data.read_text().splitlines()
    data.write_text("\n".join([lines[0], '{"prompt": "not messages"}', *lines[1:]]) + "\n")
    args = ["--model", "tiny", "--input", f"jsonl:{data}", "--epochs", "1", "--batch-size", "2"]
    args += ["--val-fraction", "0", "--eval-rows", "0"]
    assert main([*args, "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"[sft] error: {data}:2: not an SftRow: bad-record:") and "--skip-bad-rows" in err
    assert "\n" not in err

    assert main([*args, "--out", str(tmp_path / "c"), "--skip-bad-rows"]) == 0
    assert f"[sft] skipped {data}:2: not an SftRow" in capsys.readouterr().err
    [dead] = [json.loads(line) for line in (tmp_path / "c" / "dlq.jsonl").read_text().splitlines()]
    assert dead["reason"] == "bad-record" and dead["source"] == f"jsonl:{data}[0]@1"
    assert dead["payload"] == '{"prompt": "not messages"}'
    metrics = json.loads((tmp_path / "c" / "metrics.json").read_text())
    assert metrics["finished"] is True and metrics["rows_trained"] == 4  # every good row, once
