"""The torchrun check: the same SFT job on 2 data-parallel ranks and on 1 (torchrun with nccl on 2
GPUs; with gloo on CPU, as tests/test_data_parallel.py does), the same losses per step.

On CUDA both jobs train in bf16 autocast: the ranks sum their gradients in another order than one
process does, and bf16 carries that rounding further than fp32, hence the looser CUDA tolerance.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch

from ...models.tiny_corpus import sokoban_sft_rows
from ..torchrun_jobs import run_job, sft_command, step_lines
from .rows import TOLERANCE, Row

ROWS = 6  # 2 steps of 3 rows: one rank trains 2 rows of each step, the other 1
FLAGS = ["--epochs", "1", "--batch-size", "3", "--lr", "1e-3", "--val-fraction", "0", "--eval-rows", "0"]
FLAGS += ["--checkpoint-every", "100", "--log-every", "1000"]


def torchrun_row(device: str, model: str, out: Path) -> Row:
    """2 ranks against 1 on `device` (2 GPUs for CUDA)."""
    name = "torchrun 2 ranks"
    backend = "nccl" if device == "cuda" else "gloo"
    if device == "cuda" and torch.cuda.device_count() < 2:
        return Row(name, device, "skipped", f"needs ≥ 2 GPUs, found {torch.cuda.device_count()}")
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    data = out / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in sokoban_sft_rows(ROWS)), encoding="utf-8")
    # the trainer takes CUDA whenever it sees it: --device cpu hides the GPUs, as `spa run` does
    env = {"CUDA_VISIBLE_DEVICES": ""} if device == "cpu" else {}
    flags = [*FLAGS, "--model", model]
    try:
        run_job(sft_command(1, f"jsonl:{data}", out / "one", *flags), env=env)
        run_job(sft_command(2, f"jsonl:{data}", out / "two", *flags), env=env)
    except RuntimeError as error:
        return Row(name, device, "fail", f"{backend}; {time.perf_counter() - started:.0f} s", str(error)[-2000:])
    one, two = step_lines(out / "one"), step_lines(out / "two")
    if len(one) != len(two) or not one:
        return Row(
            name, device, "fail", f"{backend}; steps 1 rank {len(one)}, 2 ranks {len(two)}", "step counts differ"
        )
    tolerance = TOLERANCE[device]
    excess = max(tolerance.excess(b[k], a[k]) for a, b in zip(one, two) for k in ("loss", "grad_norm"))
    losses = [" ".join(f"{s['loss']:.4f}" for s in run) for run in (one, two)]
    figures = (
        f"{backend}; loss 1 rank {losses[0]}, 2 ranks {losses[1]}; worst excess over tolerance {excess:+.1e}; "
        f"{time.perf_counter() - started:.0f} s"
    )
    same = excess <= 0
    return Row(name, device, "pass" if same else "fail", figures, "" if same else "the ranks' losses differ")
