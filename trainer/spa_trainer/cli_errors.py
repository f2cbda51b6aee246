"""How the trainer's command-line modules end on a boundary error: one line, exit code 2.

Input that does not exist or does not decode, a broker that does not answer, an artifact that
already exists: the user can act on the message, so a traceback would only hide it. Any other
exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

BOUNDARY_ERRORS: tuple[type[BaseException], ...] = (
    ConnectionError,
    FileNotFoundError,
    FileExistsError,
    TimeoutError,
    ValueError,
)


def exit_code(label: str, work: Callable[[], object], also: tuple[type[BaseException], ...] = ()) -> int:
    """Run `work`; 0 when it returns, 2 after printing `[label] error: <message>` for a boundary error."""
    try:
        work()
    except (*BOUNDARY_ERRORS, *also) as err:
        print(f"[{label}] error: {err}", file=sys.stderr, flush=True)
        return 2
    return 0
