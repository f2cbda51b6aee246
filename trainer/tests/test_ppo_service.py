"""PPO service on JSONL input (no broker): steps, checkpoints, export, metrics, rejects, exact resume."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from spa_trainer.data.avro import SCHEMA_DIR, spa_schemas
from spa_trainer.data.rollouts import SourcedRollout, check_rollout, decode_rollout, sourced
from spa_trainer.models.load import resolve_model_dir
from spa_trainer.ppo.groups import GroupBuffer, pending_item, pending_line
from spa_trainer.ppo.service import InputExhausted, ServiceConfig, parse_args, run_service
from spa_trainer.ppo.step import PpoConfig
from spa_trainer.training.checkpoint import latest_checkpoint

from .ppo_rollouts import rollout

FIXTURES = SCHEMA_DIR.parent / "test" / "fixtures" / "avro"


class Crash(RuntimeError):
    """Stands in for a killed process."""


def _group(g: int, version: int) -> list[dict[str, Any]]:
    """Group `g` of two: a winner and a loser (different scores, so the std filter keeps it)."""
    return [
        rollout(f"t{g}a", f"g{g}", ["Right"], [1.0 + 0.1 * g], success=True, policy_version=version),
        rollout(f"t{g}b", f"g{g}", ["Left", "Up"], [-0.1, -0.1], penalty=-0.1, policy_version=version),
    ]


def _interleaved(groups: int) -> list[dict[str, Any]]:
    """Members of neighbouring groups interleave, as records of several producers do in one partition."""
    records: list[dict[str, Any]] = []
    pairs = [_group(g, version=3 if g % 2 == 0 else 2) for g in range(groups)]
    records.append(pairs[0][0])
    for g in range(groups):
        if g + 1 < groups:
            records.append(pairs[g + 1][0])
        records.append(pairs[g][1])
    return records


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _config(tmp_path: Path, data: Path, **overrides: Any) -> ServiceConfig:
    base: dict[str, Any] = {
        "model": "tiny",
        "input": f"jsonl:{data}",
        "out": str(tmp_path / "run"),
        "steps": 2,
        "groups_per_step": 2,
        "group_size": 2,
        "export_every": 2,
        "export_root": str(tmp_path / "policy"),
        "start_version": 3,
        "ppo": PpoConfig(keep_ratio=1.0, actor_lr=1e-4, critic_lr=1e-4, micro_batch_size=2),
    }
    return ServiceConfig(**{**base, **overrides})


def test_grpo_service_writes_metrics_without_a_critic_loss(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [json.dumps(r) for r in _interleaved(2)]
    ppo = PpoConfig(keep_ratio=1.0, actor_lr=1e-4, micro_batch_size=2, adv_estimator="grpo")
    cfg = _config(tmp_path, _write(tmp_path / "rollouts.jsonl", lines), steps=1, ppo=ppo)
    run_service(cfg)
    (metrics,) = [json.loads(line) for line in (Path(cfg.out) / "metrics.jsonl").read_text().splitlines()]
    assert metrics["vf_loss"] is None and math.isfinite(metrics["pg_loss"])
    step_line = next(line for line in capsys.readouterr().err.splitlines() if "step 1/1" in line)
    assert " vf " not in step_line and " ent " in step_line


def test_two_steps_write_two_checkpoints_one_export_metrics_and_dead_letters(tmp_path: Path) -> None:
    bad_score = {**_group(9, 3)[0], "score": 42.0}
    lines = [json.dumps(r) for r in _interleaved(4)]
    lines[2:2] = ["{not json", json.dumps(bad_score)]
    cfg = _config(tmp_path, _write(tmp_path / "rollouts.jsonl", lines), max_staleness=0)

    progress = run_service(cfg)

    run = Path(cfg.out)
    assert sorted(p.name for p in (run / "checkpoints").glob("step_*")) == ["step_00000001", "step_00000002"]
    latest = latest_checkpoint(run)
    assert latest is not None and latest.name == "step_00000002"
    for name in ("model/model.safetensors", "critic.safetensors", "actor_optimizer.safetensors",
                 "critic_optimizer.json", "rng.safetensors", "pending.jsonl"):  # fmt: skip
        assert (latest / name).is_file(), name
    state = json.loads((latest / "trainer_state.json").read_text())
    # 8 records + 2 bad lines read; step 2 ends with group 3's second member → next offset 10
    assert state["offsets"] == {"0": 10} and state["rows_trained"] == 8
    assert (latest / "pending.jsonl").read_text() == ""

    artifacts = sorted(p.name for p in Path(cfg.export_root).iterdir())
    assert artifacts == ["v000004"]  # --start-version 3, one export at step 2
    manifest = json.loads((Path(cfg.export_root) / "v000004" / "manifest.json").read_text())
    assert (manifest["stage"], manifest["step"], manifest["version"]) == ("ppo", 2, 4)
    assert progress.version == 4 and progress.step == 2

    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2]
    # even groups were sampled by v3 (lag 0), odd groups by v2 (lag 1); the trainer is at v3
    assert [m["staleness"] for m in metrics] == [{"0": 2, "1": 2}, {"0": 2, "1": 2}]
    assert [m["over_max_staleness"] for m in metrics] == [2, 2] and progress.over_max_staleness == 4
    for key in ("pg_loss", "vf_loss", "entropy", "score_mean", "success_rate", "tokens_per_s", "wall_s", "waited_s"):
        assert all(isinstance(m[key], float) for m in metrics), key
    assert metrics[0]["success_rate"] == 0.5

    assert progress.rejected == {"bad-json": 1, "score-mismatch": 1}
    # the final position for other processes (spa run reads the final version from it)
    final = json.loads((run / "progress.json").read_text(), parse_constant=lambda c: pytest.fail(f"bare {c}"))
    assert (final["finished"], final["step"], final["steps"], final["version"]) == (True, 2, 2, 4)
    assert final["rejected"] == {"bad-json": 1, "score-mismatch": 1} and final["records_trained"] == 8
    dead = [json.loads(line) for line in (run / "dlq.jsonl").read_text().splitlines()]
    assert [(d["reason"], d["source"].rsplit("@", 1)[1]) for d in dead] == [("bad-json", "2"), ("score-mismatch", "3")]
    assert dead[0]["payload"] == "{not json" and "42.0" in dead[1]["detail"]


def _trained(log: list[tuple[int, list[tuple[int, int]]]]) -> list[tuple[int, int]]:
    return [pos for _, positions in log for pos in positions]


def test_crash_and_resume_train_every_record_once_as_an_uninterrupted_run(tmp_path: Path) -> None:
    data = _write(tmp_path / "rollouts.jsonl", [json.dumps(r) for r in _interleaved(6)])
    settings = {"steps": 3, "export_every": 10}
    full: list[tuple[int, list[tuple[int, int]]]] = []
    ref = _config(tmp_path / "a", data, **settings)
    run_service(ref, on_step=lambda s, items: full.append((s, [(i.partition, i.offset) for i in items])))

    cfg = _config(tmp_path / "b", data, **settings)
    log: list[tuple[int, list[tuple[int, int]]]] = []

    def dying(step: int, items: list[SourcedRollout]) -> None:
        if step == 2:  # killed inside step 2: trained, not yet checkpointed
            raise Crash()
        log.append((step, [(i.partition, i.offset) for i in items]))

    with pytest.raises(Crash):
        run_service(cfg, on_step=dying)
    crashed = latest_checkpoint(Path(cfg.out))
    assert crashed is not None and crashed.name == "step_00000001"
    # group 2's first member was read while completing group 1: it waits in the checkpoint
    assert [pending_item(x).offset for x in (crashed / "pending.jsonl").read_text().splitlines()] == [3]
    assert not Path(cfg.export_root).exists()
    assert json.loads((crashed / "trained_groups.json").read_text()) == ["g0", "g1"]
    run_service(cfg, on_step=lambda s, items: log.append((s, [(i.partition, i.offset) for i in items])))

    assert [s for s, _ in log] == [1, 2, 3] and _trained(log) == _trained(full)
    assert sorted(_trained(full)) == [(0, o) for o in range(12)]
    metrics = [json.loads(line)["step"] for line in (Path(cfg.out) / "metrics.jsonl").read_text().splitlines()]
    assert metrics == [1, 2, 3]
    for name in ("model/model.safetensors", "critic.safetensors", "actor_optimizer.safetensors"):
        a = load_file(str(Path(ref.out) / "checkpoints" / "step_00000003" / name))
        b = load_file(str(Path(cfg.out) / "checkpoints" / "step_00000003" / name))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a), name
    assert [p.name for p in Path(cfg.export_root).iterdir()] == ["v000004"]  # the final export, once

    run_service(cfg)  # already at --steps: a clean no-op (re-announces the last export)
    assert len((Path(cfg.out) / "metrics.jsonl").read_text().splitlines()) == 3


def test_a_crash_between_checkpoint_and_export_is_finished_on_restart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from spa_trainer.ppo import service

    data = _write(tmp_path / "rollouts.jsonl", [json.dumps(r) for r in _interleaved(2)])
    cfg = _config(tmp_path, data, steps=1, export_every=1)
    real_export = service.export_policy

    def dead_export(*_args: object, **_kwargs: object) -> Path:
        raise Crash()

    monkeypatch.setattr(service, "export_policy", dead_export)
    with pytest.raises(Crash):
        run_service(cfg)
    assert latest_checkpoint(Path(cfg.out)) is not None and not Path(cfg.export_root).exists()
    monkeypatch.setattr(service, "export_policy", real_export)
    progress = run_service(cfg)
    assert (progress.step, progress.version) == (1, 4)
    manifest = json.loads((Path(cfg.export_root) / "v000004" / "manifest.json").read_text())
    assert (manifest["stage"], manifest["step"]) == ("ppo", 1)
    assert [json.loads(x)["step"] for x in (Path(cfg.out) / "metrics.jsonl").read_text().splitlines()] == [1]


def test_a_file_that_ends_early_is_a_clear_error(tmp_path: Path) -> None:
    data = _write(tmp_path / "rollouts.jsonl", [json.dumps(r) for r in _interleaved(3)])
    with pytest.raises(InputExhausted, match=r"ended after step 1 of 2 \(1 complete groups of 2"):
        run_service(_config(tmp_path, data))


def _item(offset: int, trajectory: str, group: str) -> SourcedRollout:
    record = rollout(trajectory, group, ["Up"], [0.0])
    return SourcedRollout(0, offset, group, json.dumps(record).encode(), {}, record=record)


def test_group_buffer_completes_whole_groups_and_bounds_open_ones() -> None:
    buffer = GroupBuffer(group_size=2, max_open=2)
    assert buffer.add(_item(0, "a1", "A")) == [] and buffer.add(_item(1, "b1", "B")) == []
    assert [r for _, r, _ in buffer.add(_item(2, "a1", "A"))] == ["duplicate-trajectory"]
    buffer.add(_item(3, "b2", "B"))
    assert buffer.ready(1) and not buffer.ready(2)
    assert [r for _, r, _ in buffer.add(_item(4, "b3", "B"))] == ["group-overflow"]
    buffer.add(_item(5, "c1", "C"))
    evicted = buffer.add(_item(6, "d1", "D"))  # third open group: the oldest (A) slides out
    assert [(i.offset, r) for i, r, _ in evicted] == [(0, "incomplete-group")]
    assert [i.offset for i in buffer.take(1)] == [1, 3]
    assert [pending_item(pending_line(i)) for i in buffer.items()] == buffer.items()
    # B was trained: a replay of it (a generator restarted mid-batch) must not become a new group
    assert [r for _, r, _ in buffer.add(_item(7, "b1", "B"))] == ["group-trained"]
    assert "B" not in buffer.groups and GroupBuffer(2, 2, trained=buffer.trained).add(_item(8, "b2", "B"))


def test_rollout_checks_name_the_bad_field() -> None:
    good = rollout("t", "g", ["Up"], [0.5], penalty=-0.1)
    assert check_rollout(good)["score"] == pytest.approx(0.4)
    cases = [
        ({**good, "group_id": ""}, "bad-record", "group_id"),
        ({**good, "policy_version": "3"}, "bad-record", "policy_version"),
        ({**good, "messages": good["messages"][:-1]}, "bad-record", "end with user"),
        ({**good, "turn_rewards": [float("nan")]}, "bad-record", "finite"),
        ({**good, "score": 1.0}, "score-mismatch", "score 1.0"),
    ]
    for record, reason, words in cases:
        item = sourced(0, 7, "k", json.dumps(record).encode(), {})
        assert (item.reason, item.record) == (reason, None), record
        assert words in item.detail
    header = sourced(0, 1, "k", json.dumps(good).encode(), {"spa-policy-version": b"9"})
    assert header.reason == "bad-header" and "spa-policy-version" in header.detail


def test_avro_frames_decode_and_bad_frames_keep_their_code() -> None:
    frame = (FIXTURES / "Rollout.v1.bin").read_bytes()  # written by the TS side
    record = decode_rollout(frame, {})
    assert isinstance(record["created_at"], int) and record["messages"][-1]["role"] == "assistant"
    unknown = sourced(0, 0, None, b"\xc3\x01" + b"\x00" * 8 + frame[10:], {})
    assert unknown.reason == "unknown-fingerprint"
    wrong = sourced(0, 0, None, (FIXTURES / "PolicyUpdate.v1.bin").read_bytes(), {})
    assert wrong.reason == "wrong-record"


def test_model_dir_accepts_the_trainer_layouts(tmp_path: Path, tiny_dir: Path) -> None:
    import shutil

    step = tmp_path / "sft" / "checkpoints" / "step_00000004"
    shutil.copytree(tiny_dir, step / "model")
    (step / "trainer_state.json").write_text("{}")
    (step.parent / "latest").write_text(step.name)
    assert resolve_model_dir(str(tmp_path / "sft")) == step / "model"
    assert resolve_model_dir(str(step)) == step / "model"
    assert resolve_model_dir(str(step / "model")) == step / "model"
    with pytest.raises(FileNotFoundError, match="trainer run folder"):
        resolve_model_dir(str(tmp_path / "nothing"))


def test_cli_flags_map_to_the_config() -> None:
    cfg = parse_args(["--model", "tiny", "--input", "kafka:spa.rollouts", "--out", "r", "--steps", "5",
                      "--groups-per-step", "4", "--group-size", "3", "--export-every", "2", "--export-root", "p",
                      "--publish", "spa.policy", "--start-version", "1", "--mask", "all-after-system",
                      "--max-staleness", "2"])  # fmt: skip
    assert (cfg.steps, cfg.groups_per_step, cfg.group_size, cfg.export_every) == (5, 4, 3, 2)
    assert (cfg.publish, cfg.start_version, cfg.ppo.mask, cfg.max_staleness) == ("spa.policy", 1, "all-after-system", 2)
    assert cfg.ppo.actor_lr == 1e-6  # docs/spa-ppo.md#hyperparameters
    assert (cfg.ppo.adv_estimator, cfg.ppo.grpo_std_norm) == ("gae", True)  # SPA: GAE
    base = ["--model", "tiny", "--input", "x", "--out", "r", "--steps", "1"]
    grpo = parse_args([*base, "--adv-estimator", "grpo", "--no-grpo-std-norm"]).ppo
    assert (grpo.adv_estimator, grpo.grpo_std_norm) == ("grpo", False)
    assert (cfg.ppo.epochs, cfg.ppo.mini_batch_size) == (1, 64)  # SPA: one pass, one step per update
    epochs = parse_args([*base, "--epochs", "4", "--mini-batch-size", "32"]).ppo
    assert (epochs.epochs, epochs.mini_batch_size) == (4, 32)
    for flag in ("--steps", "--epochs", "--mini-batch-size"):
        with pytest.raises(SystemExit):
            parse_args([*base, flag, "0"])


def test_context_window_sets_the_prompt_budget_of_turn_rows(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--model", "tiny", "--input", "x", "--out", "r", "--steps", "1", "--mask", "generated"]
    assert parse_args(base).prompt_budget() is None  # whole episodes, as SPA
    assert parse_args([*base, "--context-window", "512", "--max-new-tokens", "200"]).prompt_budget() == 312
    for extra, message in (
        (["--context-window", "512"], "needs --max-new-tokens"),
        (["--context-window", "200", "--max-new-tokens", "200"], "must exceed --max-new-tokens"),
        (["--context-window", "512", "--max-new-tokens", "200", "--mask", "response-only"], "only --mask generated"),
    ):
        with pytest.raises(SystemExit):
            parse_args([*base, *extra])
        assert message in capsys.readouterr().err


def test_policy_update_headers_use_the_ts_names() -> None:
    from spa_trainer.topics.policy_updates import encode_policy_update, policy_update_headers

    record = {"version": 7, "uri": "/a", "sha256": "0" * 64, "stage": "ppo", "step": 3, "model": "tiny",
              "format": "onnx", "created_at": 0}  # fmt: skip
    trace = "00-" + "a" * 32 + "-" + "b" * 16 + "-01"
    headers = dict(policy_update_headers(record, traceparent=trace))
    ts_frame = (FIXTURES / "PolicyUpdate.v1.bin").read_bytes()  # the TS writer's fingerprint
    assert headers == {
        "spa-policy-version": b"7",
        "spa-schema-fingerprint": ts_frame[2:10].hex().encode(),
        "traceparent": trace.encode(),
    }
    assert encode_policy_update(record)[2:10].hex() == headers["spa-schema-fingerprint"].decode()
    assert spa_schemas().current("PolicyUpdate").fingerprint == ts_frame[2:10]
    assert "traceparent" not in dict(policy_update_headers(record))
    with pytest.raises(ValueError, match="traceparent"):
        policy_update_headers(record, traceparent="not-a-trace")
