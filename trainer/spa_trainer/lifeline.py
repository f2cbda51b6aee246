"""`python -m spa_trainer.lifeline <module> [args…]`: runs `python -m <module> [args…]` so that it
dies with the process that started it, however that one ends (SIGKILL and crashes too, which run
no handler of the parent's). `spa run` starts every trainer this way (loop/lifeline.ts).

The kernel sends SIGKILL at the parent's death (prctl PR_SET_PDEATHSIG, Linux): no checkpoint or
Kafka commit of an orphan lands after its run is gone, and a half-written checkpoint is a temp
folder, never a checkpoint (checkpoints are renamed into place whole). A parent that died before
the prctl call is caught by comparing the parent pid with SPA_PARENT_PID, the pid of the process
that spawned this one. Under torchrun the chain repeats: torchrun runs here tied to `spa run`,
and each rank runs here tied to torchrun (SPA_PARENT_PID is set to this process's pid for them).
Where prctl is missing (not Linux), a thread watches stdin, the pipe the parent holds, instead.
"""

from __future__ import annotations

import ctypes
import os
import runpy
import signal
import sys
import threading

PARENT_PID_VARIABLE = "SPA_PARENT_PID"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _die_with_parent() -> bool:
    """Asks the kernel for SIGKILL when the parent dies; False where prctl is not available."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    return True


def _watch_stdin() -> None:
    """Ends the process at the end of file of stdin: the parent, its only writer, is gone."""

    def watch() -> None:
        while sys.stdin.buffer.read(65536):
            pass
        os._exit(1)

    threading.Thread(target=watch, name="lifeline", daemon=True).start()


def tie_to_parent() -> None:
    """Ties this process to the one named by SPA_PARENT_PID, and names itself for its own children.
    Without the variable (a trainer started by hand) nothing changes."""
    expected = os.environ.get(PARENT_PID_VARIABLE)
    if expected is None:
        return
    if not _die_with_parent():
        _watch_stdin()
    # the parent died before the prctl call: its death signal will never come
    if os.getppid() != int(expected):
        print(f"[lifeline] the process that started this one (pid {expected}) is gone", file=sys.stderr)
        os._exit(1)
    os.environ[PARENT_PID_VARIABLE] = str(os.getpid())


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: python -m spa_trainer.lifeline <module> [args…]")
    tie_to_parent()
    module, *args = argv
    # the module sees the command line `python -m <module> args…` would give it
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
