"""Data-parallel training under torchrun: which rank this process is, and the few collectives the
training loops use (trainer/README.md, "Data-parallel training").

    torchrun --nproc_per_node 2 -m spa_trainer.sft ...     # one process per rank

torchrun sets `RANK`, `LOCAL_RANK` and `WORLD_SIZE`; `join_ranks` then joins the process group
(nccl on CUDA, one GPU per local rank; gloo on CPU) and the training loop wraps its model in
`DistributedDataParallel`. Without those variables (a plain `python -m`), or with a world of one,
`join_ranks` returns the single rank and every helper here is the identity: the loops behave as
they did before data parallelism existed.

The loops keep the global batch: every rank sees the same global batch and trains its share of it
(`share`: items i ≡ rank mod world size), each micro-batch loss scaled so that DDP's gradient
average over ranks equals the single-process gradient (`dp_scale`).
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

from ..models.load import pick_device

T = TypeVar("T")


@dataclass(frozen=True)
class Ranks:
    """This process's place in the job: `rank` of `world_size` processes, training on `device`."""

    rank: int
    world_size: int
    device: torch.device

    @property
    def main(self) -> bool:
        """Rank 0 alone logs, checkpoints, commits offsets, exports and publishes."""
        return self.rank == 0

    @property
    def parallel(self) -> bool:
        return self.world_size > 1


def single() -> Ranks:
    """The one rank of a plain (non-torchrun) process."""
    return Ranks(0, 1, pick_device())


def join_ranks() -> Ranks:
    """This process's rank from torchrun's environment (joining the process group), or `single()`
    outside torchrun. The backend follows the device: nccl on CUDA, gloo on CPU."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return single()
    rank, local_rank = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=rank, world_size=world_size)
    return Ranks(rank, world_size, device)


def leave(ranks: Ranks, together: bool) -> None:
    """Leave the process group: a last barrier when every rank ends the normal way (`together`),
    then the group is destroyed. The caller drops its DDP wrappers first. After an error there is
    no barrier: another rank may be inside a different collective, and torchrun ends the job.

    The order avoids a deadlock at exit (seen: rank 1 of a finished SFT run hanging forever). The
    group's destructor joins its gloo worker threads, and runs in whichever thread drops the
    group's last reference; a DDP wrapper's reducer drops its reference holding the GIL. A worker
    still freeing a finished collective (tensors whose Python objects need the GIL to be released)
    then waits for the GIL while the main thread waits for the worker (pytorch/pytorch#56297). So:
    the wrappers go while the group is still registered (their reference is not the last); the
    barrier's handle is held until the group is destroyed (the worker's reference to it is not the
    last); and destroy_process_group drops the last reference."""
    if ranks.parallel and dist.is_initialized():
        done = dist.barrier(async_op=True) if together else None
        if done is not None:
            done.wait()
        dist.destroy_process_group()
        del done


def share(items: Sequence[T], ranks: Ranks) -> list[T]:
    """This rank's share of a global batch: items i ≡ rank (mod world size)."""
    return list(items[ranks.rank :: ranks.world_size])


def data_parallel(module: torch.nn.Module, ranks: Ranks) -> torch.nn.Module:
    """`module` wrapped in DistributedDataParallel when there are several ranks, else itself.

    Buffers are not broadcast on every forward (`broadcast_buffers=False`): the models' buffers
    (rotary frequencies) are constants, and a broadcast per forward would make the ranks' forward
    counts a collective, while ranks legitimately run different numbers of micro-batches."""
    if not ranks.parallel:
        return module
    device_ids = [ranks.device.index] if ranks.device.type == "cuda" else None
    # torch 2.13 renamed the flag (the old name warns); requirements allow torch from 2.6
    renamed = "forward_sync_buffers" in inspect.signature(DistributedDataParallel.__init__).parameters
    no_buffer_sync: dict[str, Any] = {"forward_sync_buffers" if renamed else "broadcast_buffers": False}
    return DistributedDataParallel(module, device_ids=device_ids, **no_buffer_sync)


def dp_scale(ranks: Ranks) -> float:
    """The factor on a rank's loss that undoes DDP's gradient average over ranks: each rank's loss
    is its share of the global loss (normalised by global counts), so the ranks' gradients must be
    summed, not averaged."""
    return float(ranks.world_size)


def accumulating(model: torch.nn.Module, last: bool) -> contextlib.AbstractContextManager[Any]:
    """Gradient accumulation over micro-batches: DDP all-reduces only on the `last` backward of a
    step (`no_sync` before it); a plain module needs nothing."""
    if isinstance(model, DistributedDataParallel) and not last:
        return model.no_sync()
    return contextlib.nullcontext()


def sum_over_ranks(values: Sequence[float], ranks: Ranks) -> list[float]:
    """Element-wise sum of every rank's `values` (float64), the same list on every rank."""
    if not ranks.parallel:
        return list(values)
    tensor = torch.tensor(list(values), dtype=torch.float64, device=ranks.device)
    dist.all_reduce(tensor)
    return [float(v) for v in tensor.cpu()]


def from_main(value: T, ranks: Ranks) -> T:
    """Rank 0's `value` on every rank (a picklable object, e.g. a checkpoint path or offsets)."""
    if not ranks.parallel:
        return value
    box: list[Any] = [value if ranks.main else None]
    dist.broadcast_object_list(box, src=0, device=ranks.device if ranks.device.type == "cuda" else None)
    return box[0]


def gather_to_all(value: T, ranks: Ranks) -> list[T]:
    """Every rank's `value`, in rank order, on every rank."""
    if not ranks.parallel:
        return [value]
    gathered: list[Any] = [None] * ranks.world_size
    dist.all_gather_object(gathered, value)
    return gathered
