"""The PPO service's checkpoint: weights, both optimizers, RNG, position and untrained records.

Layout of `<out>/checkpoints/step_<n>/` (written with `checkpoint.write_atomic_checkpoint`:
temporary folder, fsync, rename, `latest`):
  model/                        the actor as a HF folder (usable as `--model`)
  critic.safetensors            the critic (backbone + value head)
  actor_optimizer.{safetensors,json}, critic_optimizer.{safetensors,json}
  rng.safetensors               torch generator states (python RNG in trainer_state.json)
  pending.jsonl                 records read but not yet trained (members of open groups)
  trained_groups.json           the group ids trained so far (a replayed group is refused)
  trainer_state.json            next offset per partition, `Progress`, the service config

Beside the checkpoints, `<out>/progress.json` (strict JSON, replaced atomically after every step
and at the end) tells other processes where the service stands: `finished`, `step`, `steps`,
`version` (the latest published policy version), `exported_step`, `records_trained`,
`rejected`, `over_max_staleness`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from safetensors.torch import load_model, save_model
from transformers import PreTrainedTokenizerBase

from ..data.records import Offsets
from ..data.rollouts import SourcedRollout
from ..json_files import dumps, write_json
from ..training.checkpoint import (
    TrainerState,
    read_optimizer,
    restore_rng,
    write_atomic_checkpoint,
    write_optimizer,
    write_rng,
)
from .groups import pending_item, pending_line
from .step import PpoState


@dataclass
class Progress:
    """What the checkpoint records besides weights: position, version, counters."""

    step: int = 0
    version: int = 0  # latest published policy version = the trainer's version
    exported_step: int = 0  # step of the latest export (0: none yet)
    records_trained: int = 0
    rejected: dict[str, int] = field(default_factory=dict)  # reason → count
    over_max_staleness: int = 0
    next_offsets: Offsets = field(default_factory=dict)


def write_ppo_checkpoint(
    out: Path,
    state: PpoState,
    tokenizer: PreTrainedTokenizerBase,
    progress: Progress,
    pending: Sequence[SourcedRollout],
    trained_groups: Iterable[str],
    source: str,
    config: dict[str, Any],
) -> Path:
    """One atomic checkpoint of everything a restart needs to continue exactly."""

    def fill(tmp: Path) -> None:
        state.actor.save_pretrained(tmp / "model", safe_serialization=True)
        tokenizer.save_pretrained(tmp / "model")
        save_model(state.critic, str(tmp / "critic.safetensors"))  # handles shared tensors
        write_optimizer(tmp, state.actor_optimizer, "actor_optimizer")
        write_optimizer(tmp, state.critic_optimizer, "critic_optimizer")
        rng = write_rng(tmp)
        (tmp / "pending.jsonl").write_text("".join(pending_line(i) + "\n" for i in pending), encoding="utf-8")
        write_json(tmp / "trained_groups.json", sorted(trained_groups))
        trainer = TrainerState(
            step=progress.step,
            rows_trained=progress.records_trained,
            offsets=progress.next_offsets,
            world_size=state.ranks.world_size,
            source=source,
            extra={"progress": asdict(progress), "config": config},
        )
        text = dumps({**trainer.to_json(), "rng": rng}, indent=2)
        (tmp / "trainer_state.json").write_text(text, encoding="utf-8")

    return write_atomic_checkpoint(out, progress.step, fill)


def write_progress_file(out: Path, progress: Progress, steps: int) -> None:
    """`<out>/progress.json`: the service's position for other processes (the `spa run` loop reads
    the final policy version from it)."""
    fields = asdict(progress)
    fields.pop("next_offsets")
    write_json(out / "progress.json", {"finished": progress.step >= steps, "steps": steps, **fields})


def read_progress(folder: Path) -> tuple[Progress, dict[str, Any]]:
    """(Progress, python RNG state) of a checkpoint."""
    raw = json.loads((folder / "trainer_state.json").read_text(encoding="utf-8"))
    saved = dict(raw["extra"]["progress"])
    saved["next_offsets"] = {int(p): int(o) for p, o in saved["next_offsets"].items()}
    return Progress(**saved), raw["rng"]


def restore_training_state(folder: Path, state: PpoState, rng: dict[str, Any]) -> None:
    """Critic, both optimizers and RNG into a `PpoState` built from the checkpoint's `model/`."""
    load_model(state.critic, str(folder / "critic.safetensors"))
    read_optimizer(folder, state.actor_optimizer, "actor_optimizer")
    read_optimizer(folder, state.critic_optimizer, "critic_optimizer")
    restore_rng(folder, rng)  # last: building the critic drew from the global generator


def read_trained_groups(folder: Path) -> list[str]:
    """The group ids trained up to the checkpoint (none in checkpoints written before the file existed)."""
    path = folder / "trained_groups.json"
    return list(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else []


def read_pending(folder: Path) -> list[SourcedRollout]:
    """The records the checkpoint holds back for groups still open."""
    return [pending_item(line) for line in (folder / "pending.jsonl").read_text(encoding="utf-8").splitlines()]
