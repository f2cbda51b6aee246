"""Progress lines for the phases that run without step lines: the held-out metrics after SFT's
last step and the ONNX export. Each prints a line at least every `every` seconds (10 by default),
with its counts and, where the total is known, the time left, so a slow phase on a busy machine is
not taken for a hang (issue 43: the held-out metrics once ran ten silent minutes). And the time
left that the trainers' step lines end with (`StepsLeft`): a 5,172-step warm-up on a busy machine
says from its first steps that it takes hours (issue 44)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")

PROGRESS_EVERY_S = 10.0
"""Seconds between a phase's progress lines."""


def _seconds(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    return f"{s / 60:.1f} min" if s < 7200 else f"{s / 3600:.1f} h"


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


@dataclass
class StepsLeft:
    """Steps `start` → `end` of a training loop, timed from construction: this attempt's pace (a
    resumed run's earlier steps ran at another time, maybe on another machine)."""

    start: int
    end: int
    started_at: float = field(default_factory=time.monotonic)

    def text(self, step: int, now: float | None = None) -> str:
        """`, about 2.9 h left` after `step`, at the pace of this attempt's steps so far; empty
        before one is done and at the end."""
        done = step - self.start
        if done <= 0 or step >= self.end:
            return ""
        elapsed = (time.monotonic() if now is None else now) - self.started_at
        return f", about {_seconds(elapsed / done * (self.end - step))} left"


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
