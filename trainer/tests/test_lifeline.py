"""`python -m spa_trainer.lifeline <module>`: the module dies with the process that started it,
however that one ends (issue 42): SIGKILL of the parent, a parent already gone at the start, and
under torchrun, where torchrun and every rank go too. The parent here is a small Python process
standing in for `spa run` (loop/lifeline.ts sets SPA_PARENT_PID the same way)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

TRAINER = Path(__file__).resolve().parents[1]

# A module that records its pid and sleeps: what a trainer is to the lifeline.
SLEEPER = "import os, pathlib, sys, time\npathlib.Path(sys.argv[1], str(os.getpid())).touch()\ntime.sleep(120)\n"

# The stand-in parent: starts the command after `--`, tied to itself, then waits to be killed.
PARENT = (
    "import os, subprocess, sys, time\n"
    "subprocess.Popen(sys.argv[1:], env={**os.environ, 'SPA_PARENT_PID': str(os.getpid())}, stdin=subprocess.PIPE)\n"
    "time.sleep(300)\n"
)


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped by its new parent, counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def wait_for(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"timed out after {seconds} s waiting for {what}"
        time.sleep(0.1)


@pytest.fixture()
def sleeper(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The environment that finds the sleeper module, and the folder its processes write their pids to."""
    (tmp_path / "sleeper.py").write_text(SLEEPER)
    pids = tmp_path / "pids"
    pids.mkdir()
    return {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{TRAINER}"}, pids


def started(pids: Path, n: int) -> list[int]:
    wait_for(lambda: len(list(pids.iterdir())) >= n, 120, f"{n} sleeper processes")
    return [int(p.name) for p in pids.iterdir()]


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[1])


def killed_parent(command: list[str], env: dict[str, str], pids: Path, n: int) -> set[int]:
    """Starts `command` under the stand-in parent, SIGKILLs the parent once `n` sleepers run, and
    returns the pids of the sleepers and of every process between them and the parent."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT, *command], cwd=TRAINER, env=env)
    try:
        tied = set(started(pids, n))
        for pid in list(tied):
            while (pid := parent_of(pid)) != parent.pid:
                tied.add(pid)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    return tied


def test_the_module_dies_with_a_killed_parent(sleeper: tuple[dict[str, str], Path]) -> None:
    env, pids = sleeper
    command = [sys.executable, "-m", "spa_trainer.lifeline", "sleeper", str(pids)]
    tied = killed_parent(command, env, pids, 1)
    assert len(tied) == 1
    wait_for(lambda: not any(alive(pid) for pid in tied), 5, f"the orphan {tied} to end")


def test_a_parent_gone_before_the_start_ends_the_module_at_once(sleeper: tuple[dict[str, str], Path]) -> None:
    env, pids = sleeper
    gone = {**env, "SPA_PARENT_PID": "999999999"}  # not this test's pid: the parent it names is gone
    command = [sys.executable, "-m", "spa_trainer.lifeline", "sleeper", str(pids)]
    result = subprocess.run(command, cwd=TRAINER, env=gone, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 1
    assert "the process that started this one (pid 999999999) is gone" in result.stderr
    assert list(pids.iterdir()) == []


def test_without_a_parent_variable_the_module_runs_as_python_m_would(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SPA_PARENT_PID"}
    module = tmp_path / "echo_argv.py"
    module.write_text("import sys\nprint(sys.argv[1:], __name__)\n")
    result = subprocess.run([sys.executable, "-m", "spa_trainer.lifeline", "echo_argv", "--a", "1"], cwd=TRAINER,
                            env={**env, "PYTHONPATH": f"{tmp_path}{os.pathsep}{TRAINER}"}, capture_output=True,
                            text=True, timeout=60, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == "['--a', '1'] __main__\n"


@pytest.mark.slow
def test_under_torchrun_torchrun_and_every_rank_die_with_a_killed_parent(sleeper: tuple[dict[str, str], Path]) -> None:
    env, pids = sleeper
    torchrun = ["torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    command = [sys.executable, "-m", "spa_trainer.lifeline", *torchrun, "-m", "spa_trainer.lifeline", "sleeper"]
    tied = killed_parent([*command, str(pids)], env, pids, 2)
    assert len(tied) == 3  # torchrun and its two ranks
    wait_for(lambda: not any(alive(pid) for pid in tied), 5, f"torchrun and its ranks {tied} to end")
