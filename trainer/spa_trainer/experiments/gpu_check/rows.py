"""The check's rows (one JSON line each), its models by name, and the tolerances per device."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import torch

from ...models.load import resolve_model_dir
from ...models.tiny import MODEL_25M, tiny_model_dir

Result = Literal["pass", "fail", "skipped"]


@dataclass(frozen=True)
class Row:
    """One line of the table: what was checked, where, the outcome and its figures."""

    check: str
    device: str
    result: Result
    figures: str
    detail: str = ""


def emit(row: Row) -> None:
    """Print `row` as one JSON line (the TS side reads them as they come)."""
    sys.stdout.write(json.dumps(asdict(row)) + "\n")
    sys.stdout.flush()


def model_folder(name: str) -> Path:
    """`25m` (tiny.MODEL_25M, 24.6 M parameters) or any `--model` name (`tiny-local`, a folder)."""
    return tiny_model_dir(MODEL_25M) if name == "25m" else resolve_model_dir(name)


@dataclass(frozen=True)
class Tolerance:
    """|got − want| ≤ atol + rtol · |want|, per figure."""

    rtol: float
    atol: float

    def excess(self, got: float, want: float) -> float:
        """How far past the tolerance `got` is (≤ 0: within it)."""
        return abs(got - want) - (self.atol + self.rtol * abs(want))


# CUDA runs bf16 autocast against the CPU's fp32: bf16 keeps 8 bits of mantissa (≈ 0.4 % a rounding),
# averaged over hundreds of tokens per loss. On CPU both runs are fp32 and compute the same ops.
TOLERANCE = {"cuda": Tolerance(rtol=2e-2, atol=1e-2), "cpu": Tolerance(rtol=1e-5, atol=1e-6)}


def device_of(name: str) -> torch.device:
    """`cuda` or `cpu` as a torch device; CUDA must be there."""
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda: torch.cuda.is_available() is False")
    return torch.device(name)
