"""Atomic training checkpoints: weights, optimizer, scheduler, RNG and consumed offsets together.

Layout of `<run>/checkpoints/step_<n>/`:
  model/                  a normal HF folder (safetensors weights + tokenizer): `--model` accepts it
  optimizer.safetensors   every tensor of the optimizer state (`state.<param>.<name>`)
  optimizer.json          param groups and non-tensor state
  scheduler.json          LR scheduler state
  rng.safetensors         torch CPU (and CUDA) generator states
  trainer_state.json      epoch, step, position in the epoch, shuffle seed, offset range and the
                          offsets committed with it, world size, python RNG

No pickle anywhere. The folder is written under a temporary name and renamed into place, then
`latest` is replaced atomically, so a crash leaves either the old or the new checkpoint, never a
half-written one; offsets are only ever trusted from a complete checkpoint, and reach a Kafka
consumer group only after it is on disk.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from ..data.records import Offsets
from ..json_files import dumps
from ..storage import checkpoint_bytes, storage_error


@dataclass
class TrainerState:
    """Where training stands.

    SFT: `epoch_rows` rows of `epoch`'s permutation (seeded `shuffle_seed + epoch`) of the range
    `[range_start, range_end)` are trained; `offsets` are those committed with the checkpoint.
    PPO: `offsets` are the next offsets, below which every record is trained or dead-lettered.
    """

    epoch: int = 0
    step: int = 0
    rows_trained: int = 0
    epoch_rows: int = 0
    shuffle_seed: int = 0
    offsets: Offsets = field(default_factory=dict)
    range_start: Offsets = field(default_factory=dict)
    range_end: Offsets = field(default_factory=dict)
    total_steps: int = 0
    world_size: int = 1  # ranks of the data-parallel job that wrote it (torchrun; 1 without)
    source: str = ""
    # SFT: the order the range's rows are permuted from: "content" (sampler.canonical_order) or
    # "log", the order they were read in, which checkpoints written before "content" used
    row_order: str = "log"
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON form (partition keys become strings)."""
        out = asdict(self)
        for key in ("offsets", "range_start", "range_end"):
            out[key] = {str(p): o for p, o in getattr(self, key).items()}
        return out

    @staticmethod
    def from_json(raw: dict[str, Any]) -> TrainerState:
        """Inverse of `to_json`."""
        state = TrainerState(**{k: v for k, v in raw.items() if k in TrainerState.__dataclass_fields__})
        for key in ("offsets", "range_start", "range_end"):
            setattr(state, key, {int(p): int(o) for p, o in raw.get(key, {}).items()})
        return state


def _optimizer_to_files(optimizer: torch.optim.Optimizer) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    sd = optimizer.state_dict()
    tensors: dict[str, torch.Tensor] = {}
    scalars: dict[str, dict[str, Any]] = {}
    for pid, entry in sd["state"].items():
        for name, value in entry.items():
            if isinstance(value, torch.Tensor):
                tensors[f"state.{pid}.{name}"] = value.detach().cpu().contiguous()
            else:
                scalars.setdefault(str(pid), {})[name] = value
    return tensors, {"param_groups": sd["param_groups"], "scalars": scalars}


def _optimizer_from_files(tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {}
    for key, value in tensors.items():
        _, pid, name = key.split(".", 2)
        state.setdefault(int(pid), {})[name] = value
    for pid, entry in meta["scalars"].items():
        state.setdefault(int(pid), {}).update(entry)
    groups = meta["param_groups"]
    for g in groups:
        if "betas" in g:
            g["betas"] = tuple(g["betas"])
    return {"state": state, "param_groups": groups}


def _rng_state() -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    tensors = {"torch.cpu": torch.get_rng_state()}
    if torch.cuda.is_available():
        for i, s in enumerate(torch.cuda.get_rng_state_all()):
            tensors[f"torch.cuda.{i}"] = s
    version, internal, gauss = random.getstate()
    return tensors, {"python": [version, list(internal), gauss]}


def _restore_rng(tensors: dict[str, torch.Tensor], meta: dict[str, Any]) -> None:
    torch.set_rng_state(tensors["torch.cpu"])
    cuda = [tensors[k] for k in sorted(tensors) if k.startswith("torch.cuda.")]
    if cuda and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda)
    version, internal, gauss = meta["python"]
    random.setstate((version, tuple(internal), gauss))


def _write_json(path: Path, data: object) -> None:
    path.write_text(dumps(data, indent=2, sort_keys=True), encoding="utf-8")


def _fsync_tree(folder: Path) -> None:
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            with path.open("rb") as f:
                os.fsync(f.fileno())
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_optimizer(folder: Path, optimizer: torch.optim.Optimizer, stem: str = "optimizer") -> None:
    """`<stem>.safetensors` (every state tensor) + `<stem>.json` (param groups, scalar state)."""
    tensors, meta = _optimizer_to_files(optimizer)
    save_file(tensors, str(folder / f"{stem}.safetensors"))
    _write_json(folder / f"{stem}.json", meta)


def read_optimizer(folder: Path, optimizer: torch.optim.Optimizer, stem: str = "optimizer") -> None:
    """Load what `write_optimizer` wrote into `optimizer` (built over the same parameters)."""
    meta = json.loads((folder / f"{stem}.json").read_text(encoding="utf-8"))
    optimizer.load_state_dict(_optimizer_from_files(load_file(str(folder / f"{stem}.safetensors")), meta))


def write_rng(folder: Path) -> dict[str, Any]:
    """Torch generator states to `rng.safetensors`; returns the python RNG state for the JSON state."""
    tensors, meta = _rng_state()
    save_file(tensors, str(folder / "rng.safetensors"))
    return meta


def restore_rng(folder: Path, meta: dict[str, Any]) -> None:
    """Inverse of `write_rng` (`meta` is what it returned)."""
    _restore_rng(load_file(str(folder / "rng.safetensors")), meta)


def write_atomic_checkpoint(run_dir: Path, step: int, fill: Callable[[Path], None], keep: int = 3) -> Path:
    """`fill` a temporary folder, fsync it, rename it to `checkpoints/step_<n>`, point `latest` at
    it and keep the newest `keep`: a crash leaves the old checkpoint or the new one, never half.
    A full disk or an unwritable folder is a `StorageError` naming the folder (spa_trainer/storage.py)."""
    root = run_dir / "checkpoints"
    final = root / f"step_{step:08d}"
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=root))
    except OSError as err:
        told = storage_error(err, root)
        if told is None:
            raise
        raise told from err
    try:
        fill(tmp)
        _fsync_tree(tmp)
        if final.exists():  # a re-run of the same step after a crash: replace it whole
            shutil.rmtree(final)
        os.rename(tmp, final)
    except BaseException as err:
        translated = storage_error(err, root, checkpoint_bytes(root, tmp))
        shutil.rmtree(tmp, ignore_errors=True)
        if translated is not None:
            raise translated from err
        raise
    pointer = root / ".latest.tmp"
    pointer.write_text(final.name, encoding="utf-8")
    os.replace(pointer, root / "latest")
    for old in sorted(root.glob("step_*"))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def save_checkpoint(
    run_dir: Path,
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
    state: TrainerState,
    keep: int = 3,
) -> Path:
    """Write one complete checkpoint atomically, point `latest` at it, keep the newest `keep`."""

    def fill(tmp: Path) -> None:
        model.save_pretrained(tmp / "model", safe_serialization=True)
        tokenizer.save_pretrained(tmp / "model")
        write_optimizer(tmp, optimizer)
        _write_json(tmp / "scheduler.json", scheduler.state_dict())
        rng_meta = write_rng(tmp)
        _write_json(tmp / "trainer_state.json", {**state.to_json(), "rng": rng_meta})

    return write_atomic_checkpoint(run_dir, state.step, fill, keep)


def latest_checkpoint(run_dir: Path) -> Path | None:
    """The checkpoint `latest` names, or None for a fresh run."""
    pointer = run_dir / "checkpoints" / "latest"
    if not pointer.is_file():
        return None
    folder = run_dir / "checkpoints" / pointer.read_text(encoding="utf-8").strip()
    if not (folder / "trainer_state.json").is_file():
        raise FileNotFoundError(f"{pointer} names {folder.name}, which is missing or incomplete")
    return folder


def restore_checkpoint(
    folder: Path,
    optimizer: torch.optim.Optimizer,
    scheduler: torch.optim.lr_scheduler.LRScheduler,
) -> TrainerState:
    """Restore optimizer, scheduler and RNG from `folder` (the model was loaded from
    `folder/model` by the caller) and return the trainer state with its offsets."""
    read_optimizer(folder, optimizer)
    scheduler.load_state_dict(json.loads((folder / "scheduler.json").read_text(encoding="utf-8")))
    raw = json.loads((folder / "trainer_state.json").read_text(encoding="utf-8"))
    restore_rng(folder, raw.pop("rng"))
    return TrainerState.from_json(raw)
