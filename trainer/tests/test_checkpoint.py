"""Checkpoint files: no pickle, exact optimizer/scheduler/RNG round trip, atomic replacement."""

from __future__ import annotations

import random
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, get_cosine_schedule_with_warmup

from spa_trainer.training.checkpoint import TrainerState, latest_checkpoint, restore_checkpoint, save_checkpoint


def _setup(tiny_dir: Path):
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.01)
    sched = get_cosine_schedule_with_warmup(opt, 2, 20)
    return model, opt, sched


def test_round_trip_is_exact(tiny_dir: Path, tmp_path: Path) -> None:
    model, opt, sched = _setup(tiny_dir)
    tok = AutoTokenizer.from_pretrained(tiny_dir)
    for _ in range(3):
        model(input_ids=torch.tensor([[1, 5, 9, 2]]), labels=torch.tensor([[1, 5, 9, 2]])).loss.backward()
        opt.step()
        sched.step()
        opt.zero_grad()
    state = TrainerState(epoch=1, step=3, offsets={0: 7, 3: 2}, range_end={0: 9, 3: 4}, total_steps=20)
    folder = save_checkpoint(tmp_path, model, tok, opt, sched, state)
    expected_torch, expected_py = torch.rand(3), random.random()
    assert sorted(p.name for p in folder.iterdir()) == [
        "model",
        "optimizer.json",
        "optimizer.safetensors",
        "rng.safetensors",
        "scheduler.json",
        "trainer_state.json",
    ]
    assert not list(folder.rglob("*.pt")) and not list(folder.rglob("*.bin")) and not list(folder.rglob("*.pkl"))

    model2, opt2, sched2 = _setup(folder / "model")
    restored = restore_checkpoint(folder, opt2, sched2)
    assert restored.offsets == {0: 7, 3: 2} and restored.range_end == {0: 9, 3: 4} and restored.step == 3
    assert sched2.get_last_lr() == sched.get_last_lr()
    before, after = opt.state_dict()["state"], opt2.state_dict()["state"]
    assert before.keys() == after.keys() and len(before) > 0
    for pid, entry in before.items():
        assert all(torch.equal(entry[k], after[pid][k]) for k in ("exp_avg", "exp_avg_sq", "step"))
    assert opt2.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    assert torch.equal(torch.rand(3), expected_torch) and random.random() == expected_py
    for p, q in zip(model.parameters(), model2.parameters()):
        assert torch.equal(p, q)


def test_latest_ignores_unfinished_temp_folders(tiny_dir: Path, tmp_path: Path) -> None:
    model, opt, sched = _setup(tiny_dir)
    tok = AutoTokenizer.from_pretrained(tiny_dir)
    save_checkpoint(tmp_path, model, tok, opt, sched, TrainerState(step=1))
    (tmp_path / "checkpoints" / ".step_00000002.crashed").mkdir()  # what a kill mid-write leaves
    latest = latest_checkpoint(tmp_path)
    assert latest is not None and latest.name == "step_00000001"
    for step in (2, 3, 4, 5):
        save_checkpoint(tmp_path, model, tok, opt, sched, TrainerState(step=step), keep=2)
    names = sorted(p.name for p in (tmp_path / "checkpoints").glob("step_*"))
    assert names == ["step_00000004", "step_00000005"]
    latest = latest_checkpoint(tmp_path)
    assert latest is not None and latest.name == "step_00000005"
    assert latest_checkpoint(tmp_path / "nothing") is None
