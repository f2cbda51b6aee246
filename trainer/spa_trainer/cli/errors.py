"""How the trainer's command-line modules end on a boundary error: one line, exit code 2.

Input that does not exist or does not decode, a broker that does not answer, an artifact that
already exists: the user can act on the message, so a traceback would only hide it. Any other
exception is a bug and keeps its traceback. A numeric flag out of its range is such an error too:
`int_arg` and `float_arg` add flags whose type checks the range (`--batch-size must be an integer
in 1..65536, got 0`, exit 2) and whose help states it, as the `spa` CLI's flags do.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import Any

from ..storage import StorageError, folder_of, storage_error

# The ranges of the trainer's numeric flags; those `spa run` passes have the same range in its own
# flags (cli/options.ts).
SEED_MAX = 2**31 - 1  # a seed, as the spa CLI takes it (an Avro int)
EPOCHS_MAX = 1_000
ROWS_MAX = 65_536  # rows or sequences per optimizer step or forward pass; rows scored
TOKENS_MAX = 131_072  # a window or a generation budget
WEIGHT_MAX = 1_000  # loss weights and coefficients
STEPS_MAX = 100_000_000  # optimizer steps, and intervals counted in them
BATCHES_MAX = 100_000  # PPO steps (one batch of groups each), steps between exports
GROUPS_MAX = 100_000  # groups (puzzles) per PPO step
GROUP_SIZE_MAX = 1_000  # records per group
STALENESS_MAX = 1_000  # policy versions a record may lag behind
VERSION_MAX = 1_000_000_000  # policy versions and export steps
OPEN_GROUPS_MAX = 1_000_000  # incomplete groups a PPO service holds
IDLE_TIMEOUT_MAX_S = 7 * 24 * 3600  # a week without a record
THREADS_MAX = 1_024  # CPU threads of one process

BOUNDARY_ERRORS: tuple[type[BaseException], ...] = (
    ConnectionError,
    FileNotFoundError,
    FileExistsError,
    TimeoutError,
    ValueError,
    StorageError,
)


def exit_code(label: str, work: Callable[[], object], also: tuple[type[BaseException], ...] = ()) -> int:
    """Run `work`; 0 when it returns, 2 after printing `[label] error: <message>` for a boundary error
    (a full disk or an unwritable folder is one, wherever it happens: storage.py)."""
    try:
        work()
    except (*BOUNDARY_ERRORS, *also) as err:
        print(f"[{label}] error: {err}", file=sys.stderr, flush=True)
        return 2
    except OSError as err:
        folder = folder_of(err)
        told = storage_error(err, folder) if folder is not None else None
        if told is None:
            raise
        print(f"[{label}] error: {told}", file=sys.stderr, flush=True)
        return 2
    return 0


def _out_of_range(flag: str, message: str) -> argparse.ArgumentError:
    # An ArgumentError without an action: argparse prints the message as is (`prog: error: <message>`,
    # exit 2), where an ArgumentTypeError would be prefixed "argument <flag>: ".
    return argparse.ArgumentError(None, f"{flag} {message}")


def int_in(flag: str, lo: int, hi: int) -> Callable[[str], int]:
    """argparse type: an integer in lo..hi; the error names `flag` and the range."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not lo <= value <= hi:
            raise _out_of_range(flag, f"must be an integer in {lo}..{hi}, got {text}")
        return value

    return parse


def float_in(flag: str, lo: float, hi: float, *, above: bool = False, below: bool = False) -> Callable[[str], float]:
    """argparse type: a finite number from lo to hi (`above`/`below`: that bound excluded)."""
    bounds = float_range(lo, hi, above, below)

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        inside = (value > lo if above else value >= lo) and (value < hi if below else value <= hi)
        if not (math.isfinite(value) and inside):
            raise _out_of_range(flag, f"must be a number with {bounds}, got {text}")
        return value

    return parse


def float_range(lo: float, hi: float, above: bool, below: bool) -> str:
    return f"{lo:g} {'<' if above else '≤'} x {'<' if below else '≤'} {hi:g}"


def _with_range(help_text: str | None, bounds: str) -> str:
    return f"{help_text} ({bounds})" if help_text else f"({bounds})"


def int_arg(
    parser: argparse.ArgumentParser, flag: str, lo: int, hi: int, *, help: str | None = None, **kw: Any
) -> None:
    """Adds an integer flag checked against lo..hi; its help ends with the range."""
    parser.add_argument(flag, type=int_in(flag, lo, hi), help=_with_range(help, f"{lo}..{hi}"), **kw)


def float_arg(
    parser: argparse.ArgumentParser,
    flag: str,
    lo: float,
    hi: float,
    *,
    above: bool = False,
    below: bool = False,
    help: str | None = None,
    **kw: Any,
) -> None:
    """Adds a number flag checked against lo..hi (`above`/`below`: exclusive); its help ends with the range."""
    bounds = float_range(lo, hi, above, below)
    parser.add_argument(
        flag, type=float_in(flag, lo, hi, above=above, below=below), help=_with_range(help, bounds), **kw
    )
