"""--report-to: the SFT and PPO curves in TensorBoard event files and a W&B offline run, read back
with each tool's own reader; a run's evaluations as scalars and its picture (eval_board, plots)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from spa_trainer.eval_board import write_eval_board
from spa_trainer.plots import write_plot
from spa_trainer.ppo.service import ServiceConfig, run_service
from spa_trainer.ppo.step import PpoConfig
from spa_trainer.sft.config import SftConfig, parse_args
from spa_trainer.sft.train import run_sft
from spa_trainer.training.reporting import open_reporter

from .ppo_rollouts import rollout
from .synthetic import sokoban_rows, write_jsonl


def scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """Every scalar of a TensorBoard run folder, (step, value) by tag, as TensorBoard reads them."""
    events = EventAccumulator(str(folder))
    events.Reload()
    return {tag: [(e.step, e.value) for e in events.Scalars(tag)] for tag in events.Tags()["scalars"]}


def test_sft_writes_trl_named_scalars_equal_to_its_step_lines(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "rows.jsonl", sokoban_rows(6))
    board = tmp_path / "tensorboard" / "sft"
    cfg = SftConfig(input=f"jsonl:{data}", out=str(tmp_path / "run"), epochs=2, batch_size=2, eval_rows=2)
    run_sft(replace(cfg, logging_dir=str(board)))
    found = scalars(board)
    steps = [json.loads(line) for line in (tmp_path / "run" / "steps.jsonl").read_text().splitlines()]
    assert found["train/loss"] == [(s["step"], pytest.approx(s["loss"])) for s in steps]
    assert found["train/learning_rate"] == [(s["step"], pytest.approx(s["lr"])) for s in steps]
    assert [step for step, _ in found["train/grad_norm"]] == [s["step"] for s in steps]
    assert found["train/epoch"][-1] == (steps[-1]["step"], pytest.approx(2.0))
    assert all(v > 0 for _, v in found["perf/tokens_per_s"])
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert found["eval/loss"] == [(metrics["step"], pytest.approx(metrics["val_loss"]))]


def test_report_to_none_writes_no_event_file(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "rows.jsonl", sokoban_rows(4))
    cfg = SftConfig(input=f"jsonl:{data}", out=str(tmp_path / "run"), epochs=1, batch_size=2, eval_rows=1)
    run_sft(replace(cfg, report_to=("none",)))
    assert not list(tmp_path.rglob("events.out.tfevents.*"))


def test_report_to_is_a_list_of_trls_choices() -> None:
    assert parse_args(["--input", "jsonl:x", "--report-to", "tensorboard", "wandb"]).report_to == (
        "tensorboard",
        "wandb",
    )
    assert parse_args(["--input", "jsonl:x"]).report_to == ("tensorboard",)
    for bad in (["comet"], ["none", "wandb"]):
        with pytest.raises(SystemExit):
            parse_args(["--input", "jsonl:x", "--report-to", *bad])


def _groups(count: int) -> list[str]:
    """`count` groups of two rollouts, a winner and a loser."""
    lines: list[str] = []
    for g in range(count):
        lines.append(json.dumps(rollout(f"t{g}a", f"g{g}", ["Right"], [1.0], success=True, policy_version=3)))
        lines.append(json.dumps(rollout(f"t{g}b", f"g{g}", ["Left"], [-0.1], penalty=-0.1, policy_version=2)))
    return lines


def test_ppo_writes_trl_and_verl_named_scalars_equal_to_its_metrics_lines(tmp_path: Path) -> None:
    data = tmp_path / "rollouts.jsonl"
    data.write_text("".join(line + "\n" for line in _groups(4)), encoding="utf-8")
    board = tmp_path / "tensorboard" / "ppo"
    cfg = ServiceConfig(
        model="tiny", input=f"jsonl:{data}", out=str(tmp_path / "run"), steps=2, groups_per_step=2, group_size=2,
        export_every=2, export_root=str(tmp_path / "policy"), start_version=3, logging_dir=str(board),
        ppo=PpoConfig(keep_ratio=1.0, actor_lr=1e-4, critic_lr=1e-4, micro_batch_size=2),
    )  # fmt: skip
    run_service(cfg)
    found = scalars(board)
    lines = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert found["train/loss"] == [(m["step"], pytest.approx(m["pg_loss"])) for m in lines]
    assert found["train/entropy"] == [(m["step"], pytest.approx(m["entropy"])) for m in lines]
    assert found["train/reward"] == [(m["step"], pytest.approx(m["score_mean"])) for m in lines]
    assert found["score/success_rate"] == [(m["step"], pytest.approx(m["success_rate"])) for m in lines]
    assert found["critic/vf_loss"] == [(m["step"], pytest.approx(m["vf_loss"])) for m in lines]
    assert found["train/learning_rate"] == [(1, pytest.approx(1e-4)), (2, pytest.approx(1e-4))]
    assert found["staleness/mean"] == [(1, pytest.approx(0.5)), (2, pytest.approx(0.5))]  # versions 3 and 2 at v3
    assert found["perf/tokens_per_s"][0][1] == pytest.approx(lines[0]["tokens_per_s"])
    assert "actor/pg_loss" not in found  # one name per quantity: TRL's where it has one


def _wandb_log_records(run_file: Path) -> list[bytes]:
    """The records of a W&B run file (`run-*.wandb`, wandb-core's transaction log): after the 7-byte
    header `:W&B` + magic + version, LevelDB's log format, 32 KiB blocks of chunks, each behind a
    7-byte header (CRC32C, length, type: 1 full, 2 first, 3 middle, 4 last). wandb 0.30 ships no
    Python reader of it (its datastore module is gone); the records are wandb's own protobuf."""
    data, block = run_file.read_bytes(), 32 * 1024
    assert data[:7] == b":W&B\xe1\xbe\x00", data[:7]
    records, pending, pos = [], b"", 7
    while pos + 7 <= len(data):
        room = block - pos % block
        length, kind = int.from_bytes(data[pos + 4 : pos + 6], "little"), data[pos + 6]
        if room < 7 or (length == 0 and kind == 0):  # a block's zero padding
            pos += room
            continue
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            records.append(pending)
            pending = b""
    return records


def _wandb_history(run_dir: Path) -> list[dict[str, Any]]:
    """The `history` records of a W&B offline run folder, decoded with wandb's own protobuf."""
    from wandb.proto import wandb_internal_pb2

    (run_file,) = run_dir.glob("run-*.wandb")
    rows: list[dict[str, Any]] = []
    for data in _wandb_log_records(run_file):
        record = wandb_internal_pb2.Record()  # pyright: ignore[reportAttributeAccessIssue] (generated, no stubs)
        record.ParseFromString(data)
        if record.WhichOneof("record_type") == "history":
            rows.append(
                {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            )
    return rows


def test_wandb_offline_run_holds_the_logged_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        import wandb  # noqa: F401 (only whether it imports)
    except ImportError:
        # wandb imports opentelemetry-sdk, whose semantic conventions some wheel indexes lack (setup
        # warns, as on this project's machines): there --report-to wandb is one clear error instead
        with pytest.raises(ValueError, match=r"^--report-to wandb: wandb does not import \(.*leave wandb out"):
            open_reporter(("wandb",), out=tmp_path, logging_dir=None, run_name="r1/sft", config={})
        return
    monkeypatch.delenv("WANDB_MODE", raising=False)  # offline is the default: no W&B server is reachable here
    monkeypatch.setenv("WANDB_SILENT", "true")
    reporter = open_reporter(("wandb",), out=tmp_path, logging_dir=None, run_name="r1/sft", config={"lr": 0.1})
    reporter.log({"train/loss": 2.5, "train/learning_rate": 1e-4}, 1)
    reporter.log({"train/loss": 1.25, "train/learning_rate": 5e-5, "eval/loss": float("nan")}, 2)
    reporter.close()
    (run_dir,) = (tmp_path / "wandb").glob("offline-run-*")
    history = _wandb_history(run_dir)
    assert [(h["_step"], h["train/loss"], h["train/learning_rate"]) for h in history] == [
        (1, 2.5, 1e-4),
        (2, 1.25, 5e-5),
    ]
    assert all("eval/loss" not in h for h in history)  # a NaN is not reported


def test_report_to_wandb_without_wandb_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)  # as when it is not installed: its import fails
    with pytest.raises(
        ValueError, match=r"^--report-to wandb: wandb does not import \(.*leave wandb out of --report-to$"
    ):
        open_reporter(("wandb",), out=tmp_path, logging_dir=None, run_name="r1/sft", config={})


def _evaluation(version: int, pass1: float, stage: str, policy: str = "onnx:v") -> dict[str, Any]:
    return {"policy": policy, "policyVersion": version, "stage": stage, "k": 4, "pass1": pass1, "pass1StdErr": 0.03,
            "passK": pass1 + 0.1, "passKStdErr": 0.04}  # fmt: skip


def _summary(run_id: str, pass1s: list[float]) -> dict[str, Any]:
    evaluations = [_evaluation(0, 0.2, "random floor", "random")]
    evaluations += [_evaluation(v, p, f"v{v}") for v, p in enumerate(pass1s, start=1)]
    config = {"name": "_2_sokoban", "env": "sokoban", "model": "tiny-local", "evalPuzzles": 8, "evalK": 4,
              "exportEvery": 2}  # fmt: skip
    seconds = {"kafka": 1.0, "warm-up sft": 50.0, "sft": 30.0, "self-play + ppo": 40.0, "evaluate": 20.0}
    return {"runId": run_id, "runDir": "/r", "config": config, "evaluations": evaluations, "seconds": seconds}


def test_eval_board_writes_pass_at_k_by_version_and_a_check_by_ppo_step(tmp_path: Path) -> None:
    run = tmp_path / "summary.json"
    run.write_text(json.dumps(_summary("r1", [0.5, 0.6])))
    write_eval_board(run, tmp_path / "tb" / "eval", ("tensorboard",))
    found = scalars(tmp_path / "tb" / "eval")
    assert found["eval/pass@1"] == [(1, pytest.approx(0.5)), (2, pytest.approx(0.6))]
    assert found["eval/pass@4"] == [(1, pytest.approx(0.6)), (2, pytest.approx(0.7))]
    assert found["eval/random_floor_pass@1"] == [(1, pytest.approx(0.2)), (2, pytest.approx(0.2))]
    check = tmp_path / "ppo-check.json"
    check.write_text(json.dumps({"arms": {"wm": _summary("c-wm", [0.5, 0.6, 0.7])}}))
    write_eval_board(check, tmp_path / "tb", ("tensorboard",))
    steps = [step for step, _ in scalars(tmp_path / "tb" / "wm")["eval/pass@1"]]
    assert steps == [0, 2, 4]  # PPO steps: versions exportEvery (2) steps apart


def test_plots_write_a_png_for_a_run_and_for_a_check(tmp_path: Path) -> None:
    run = tmp_path / "summary.json"
    run.write_text(json.dumps(_summary("r1", [0.5, 0.6])))
    check = tmp_path / "ppo-check.json"
    check.write_text(json.dumps({"arms": {"wm": _summary("c-wm", [0.5, 0.6]), "ppo": _summary("c-ppo", [0.4, 0.5])}}))
    for source in (run, check):
        png = write_plot(source)
        assert png == source.with_suffix(".png")
        header = png.read_bytes()[:24]
        assert header[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")
        assert (width, height) == (1300, 450)
