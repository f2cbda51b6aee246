"""The SFT run's rows: the held-out split by puzzle and the per-epoch shuffle (docs/spa-sft.md).

An SFT run trains on a fixed offset range of its source (fixed at the first start, stored in the
checkpoint). The range is read once: held-out rows go to evaluation, training rows stay in memory
(rows are a few KB; SPA's full size is ~6,400 rows), encoded once before the first step
(`sft.encode_rows`), and every epoch visits them in a fresh
permutation seeded with `shuffle seed + epoch`, as SPA's sampler does (docs/spa-sft.md#sampler).
The permutation is of the rows in their canonical order, not their arrival order: generator shards
write concurrently, so the same rows reach a topic in a different order each run
(docs/spa-sft.md#sampler).
A checkpoint stores the seed, the epoch and how many rows of that epoch's permutation are
trained, so a resumed run continues the same permutation at the same place.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import torch

from ..data.records import Offsets
from ..data.sft_rows import RowSource, SftRow, SourcedRow

T = TypeVar("T")


def puzzle_key(row: SftRow) -> str:
    """What identifies the puzzle a row was played on: its first user message (the instruction and
    the initial state), shared by every turn of every trajectory of that puzzle, so the copies a
    group plays of one puzzle stay together (docs/spa-sft.md#split). A row without a user message
    falls back to its trajectory id."""
    first_user = next((m.content for m in row.prompt if m.role == "user"), None)
    return f"puzzle:{first_user}" if first_user is not None else f"trajectory:{row.trajectory_id}"


def is_held_out(row: SftRow, fraction: float) -> bool:
    """Deterministic split on a hash of the row's puzzle: all rows of a puzzle land on one side."""
    digest = hashlib.sha256(puzzle_key(row).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def canonical_order(rows: Sequence[T], row_of: Callable[[T], SftRow]) -> list[T]:
    """`rows` sorted by a hash of their contents (prompt and response): the same rows give the same
    order however concurrent writers interleaved them and whatever the run is called (trajectory
    ids name the run), and any prefix (the held-out rows scored by exact match) is a spread sample
    rather than the first trajectories. Rows without a trajectory id (hand-made files) come first
    and keep their log order (the sort is stable)."""

    def key(item: T) -> bytes:
        row = row_of(item)
        if not row.trajectory_id:
            return b""
        contents = json.dumps([row.messages(), row.response], ensure_ascii=False)
        return hashlib.sha256(contents.encode("utf-8")).digest()

    return sorted(rows, key=key)


@dataclass(frozen=True)
class RangeRows:
    """One read of the run's offset range: the training and held-out rows."""

    train: list[SourcedRow]
    held_out: list[SftRow]


def read_range(
    source: RowSource, start: Offsets, end: Offsets, val_fraction: float, split: bool = True, canonical: bool = True
) -> RangeRows:
    """Read `[start, end)` once; with `split`, rows of held-out puzzles go to `held_out`. Without
    `canonical`, the rows stay in the order they were read (a checkpoint written before the
    canonical order resumes the permutation it began)."""
    train: list[SourcedRow] = []
    held_out: list[SftRow] = []
    for sourced in source.read(start, end):
        if split and is_held_out(sourced.row, val_fraction):
            held_out.append(sourced.row)
        else:
            train.append(sourced)
    if not canonical:
        return RangeRows(train, held_out)
    return RangeRows(canonical_order(train, lambda s: s.row), canonical_order(held_out, lambda r: r))


def epoch_order(rows: int, seed: int, epoch: int) -> list[int]:
    """The permutation of `rows` training rows for `epoch`: `torch.randperm` with a generator
    seeded `seed + epoch`, the order torch's DistributedSampler gives one rank (docs/spa-sft.md#sampler)."""
    generator = torch.Generator().manual_seed(seed + epoch)
    return [int(i) for i in torch.randperm(rows, generator=generator)]


def remaining_batches(rows: Sequence[T], seed: int, epoch: int, done: int, batch_size: int) -> list[list[T]]:
    """The batches of `epoch` after its first `done` rows (a multiple of `batch_size` except at the
    epoch's end); the last batch may be short."""
    order = epoch_order(len(rows), seed, epoch)[done:]
    return [[rows[i] for i in order[at : at + batch_size]] for at in range(0, len(order), batch_size)]
