"""`python -m spa_trainer.experiments.gpu_check {probe,trainer,export,torchrun}` (see __init__.py).
Bad flags exit 2 with argparse's one line; a check that fails prints a `fail` row and exits 0 (the
table, not the exit code, carries the outcome; the TS side exits 1 on any fail)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from transformers.utils import logging as hf_logging

from ...cli.errors import int_arg
from .export_check import export_rows
from .rows import device_of, emit
from .torchrun_check import torchrun_row
from .trainer_steps import trainer_rows


def probe() -> dict[str, object]:
    """What torch sees: CUDA and its GPUs, the CUDA version torch was built for, bf16 support."""
    cuda = torch.cuda.is_available()
    return {
        "cuda": cuda,
        "devices": torch.cuda.device_count() if cuda else 0,
        "names": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "bf16": bool(cuda and torch.cuda.is_bf16_supported()),
    }


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m spa_trainer.experiments.gpu_check")
    p.add_argument("command", choices=["probe", "trainer", "export", "torchrun"])
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--models", default="tiny-local,25m", help="comma-separated: tiny-local, 25m or --model names")
    p.add_argument("--out", default=None, help="export and torchrun: a folder of their own (artifacts, runs)")
    int_arg(p, "--steps", 2, 20, default=3, help="trainer: SFT and PPO steps per model")
    a = p.parse_args(argv)
    hf_logging.disable_progress_bar()  # the rows are the output; loading bars would bury a failure's traceback
    if a.command == "probe":
        print(json.dumps(probe()))
        return 0
    if a.command in ("export", "torchrun") and not a.out:
        p.error(f"{a.command} needs --out DIR")
    try:
        device_of(a.device)
    except RuntimeError as error:
        p.error(str(error))
    models = [m for m in a.models.split(",") if m]
    if a.command == "trainer":
        rows = trainer_rows(a.device, models, a.steps)
    elif a.command == "export":
        rows = export_rows(a.device, models, Path(a.out))
    else:
        rows = iter([torchrun_row(a.device, models[0], Path(a.out))])
    for row in rows:
        emit(row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
