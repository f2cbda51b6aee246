"""Progress lines for the phases that run without step lines: the held-out metrics after SFT's
last step and the ONNX export. Each prints a line at least every `every` seconds (10 by default),
with its counts and, where the total is known, the time left, so a slow phase on a busy machine is
not taken for a hang (issue 43: the held-out metrics once ran ten silent minutes)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")

PROGRESS_EVERY_S = 10.0
"""Seconds between a phase's progress lines."""


def _seconds(s: float) -> str:
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.1f} min"


class PhaseProgress:
    """Counts a phase's items (`total` of them when known, in `unit`) and prints
    `[label] phase: n/total unit, t s, about t' s left` once `every` seconds have passed since the
    phase began or its last line."""

    def __init__(
        self,
        label: str,
        phase: str,
        total: int | None = None,
        unit: str = "rows",
        every: float = PROGRESS_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label, self.phase, self.total, self.unit, self.every, self.clock = label, phase, total, unit, every, clock
        self.started = self.last = clock()

    def count(self, done: int) -> None:
        """`done` items finished: a line when `every` seconds have passed since the last one."""
        now = self.clock()
        if now - self.last < self.every:
            return
        self.last = now
        elapsed = now - self.started
        of = f"/{self.total}" if self.total is not None else ""
        left = ""
        if self.total is not None and 0 < done < self.total:
            left = f", about {_seconds(elapsed * (self.total - done) / done)} left"
        print(f"[{self.label}] {self.phase}: {done}{of} {self.unit}, {_seconds(elapsed)}{left}", flush=True)

    def over(self, items: Iterable[T]) -> Iterator[T]:
        """`items`, counting each one handed out as finished when the next is asked for."""
        for done, item in enumerate(items):
            self.count(done)
            yield item


@contextlib.contextmanager
def heartbeat(label: str, phase: str, every: float = PROGRESS_EVERY_S) -> Iterator[None]:
    """A line `[label] phase: still running, t s` every `every` seconds while the block runs, for a
    phase with nothing to count (one export call)."""
    stop = threading.Event()
    started = time.monotonic()

    def beat() -> None:
        while not stop.wait(every):
            print(f"[{label}] {phase}: still running, {_seconds(time.monotonic() - started)}", flush=True)

    thread = threading.Thread(target=beat, name=f"{label} heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
