"""SFT jobs on 1 or n data-parallel ranks as subprocesses, compared through `<out>/steps.jsonl`: the
machinery of tests/test_data_parallel.py (gloo on CPU) and of `npm run gpu-check` (nccl on GPUs).

`sft_command(2, ...)` is `python -m torch.distributed.run --standalone --nproc_per_node 2 -m
spa_trainer.sft ...`; `run_job` runs it from trainer/ to the end and, on a timeout, kills torchrun
and its ranks, so no rank outlives the caller.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

TRAINER = Path(__file__).resolve().parents[2]
"""trainer/: the jobs run from here (`-m spa_trainer.sft`)."""


def sft_command(ranks: int, data: str, out: Path, *flags: str) -> list[str]:
    """`python -m spa_trainer.sft --input <data> --out <out> <flags>`, under torchrun when `ranks` > 1."""
    launcher = ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(ranks)] if ranks > 1 else []
    return [sys.executable, *launcher, "-m", "spa_trainer.sft", "--input", data, "--out", str(out), *flags]


def run_job(
    command: list[str], timeout: float = 300, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `command` from trainer/ to the end (`env` added to this process's); raises RuntimeError
    with its output when it fails. On a timeout torchrun and its ranks are killed."""
    # torchrun sets OMP_NUM_THREADS=1 for its ranks; the same for one process, so both compute alike
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    proc = subprocess.Popen(command, cwd=TRAINER, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            kill_job(proc)
            proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {proc.returncode}:\n{stdout}\n{stderr}")
    return subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)


def step_lines(out: Path) -> list[dict[str, Any]]:
    """`<out>/steps.jsonl`: one line per optimizer step (loss, grad norm, lr, rows per rank), by rank 0."""
    return [json.loads(line) for line in (out / "steps.jsonl").read_text(encoding="utf-8").splitlines()]


def rank_pid(launcher: subprocess.Popen[str], rank: int) -> int | None:
    """The pid of torchrun's worker `rank` (a child of the launcher with RANK=<rank>), if it runs."""
    for proc in Path("/proc").iterdir():
        try:
            parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            env = (proc / "environ").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if parent == launcher.pid and f"RANK={rank}".encode() in env:
            return int(proc.name)
    return None


def kill_job(launcher: subprocess.Popen[str], ranks: int = 2) -> None:
    """SIGKILL a torchrun job: its ranks first (each runs in a session of its own, so killing
    torchrun's process group would leave them running), then torchrun's group."""
    for rank in range(ranks):
        pid = rank_pid(launcher, rank)
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
    os.killpg(launcher.pid, signal.SIGKILL)
