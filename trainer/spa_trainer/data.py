"""SFT input: the SftRow record and the `RowSource` abstraction over where rows come from.

A source is a set of partitions (a JSONL file is one partition; a Kafka topic has many), and a
position in it is a per-partition offset map. Training reads a *fixed* offset range (SPA trains
epochs over a fixed data set), and a checkpoint stores the position within it (`sft_data.py`), so a
restart neither skips nor repeats a row.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

Offsets = dict[int, int]
"""Next offset to read, per partition."""


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: str
    content: str


@dataclass(frozen=True)
class SftRow:
    """One assistant turn of a ground-truth-annotated trajectory (SPA's SFT data has one row per turn)."""

    prompt: tuple[Message, ...]
    response: str
    trajectory_id: str = ""
    turn: int = 0
    data_source: str = ""
    mask_transitions: bool = False  # leave both states out of the loss (docs/spa-sft.md#masking)
    extra: Mapping[str, Any] = field(default_factory=dict)

    @staticmethod
    def from_dict(raw: Mapping[str, Any]) -> SftRow:
        """Parse the TS side's SftRow JSON (or a decoded Avro record).

        `prompt` may be a list of {role, content} or a JSON string of one (as in
        SPA's released `tyzhu/SPA-sudoku-data`).
        """
        prompt = raw.get("prompt")
        if isinstance(prompt, str):
            prompt = json.loads(prompt)
        if not isinstance(prompt, list) or not prompt:
            raise TypeError(f"SftRow.prompt must be a non-empty list of messages, got {prompt!r:.80}")
        response = raw.get("response")
        if not isinstance(response, str):
            raise TypeError(f"SftRow.response must be a string, got {type(response).__name__}")
        messages = tuple(Message(str(m["role"]), str(m["content"])) for m in prompt)
        known = {"prompt", "response", "trajectory_id", "turn", "data_source", "mask_transitions"}
        return SftRow(
            prompt=messages,
            response=response,
            trajectory_id=str(raw.get("trajectory_id", "")),
            turn=int(raw.get("turn", 0) or 0),
            data_source=str(raw.get("data_source", "")),
            mask_transitions=bool(raw.get("mask_transitions", False)),
            extra={k: v for k, v in raw.items() if k not in known},
        )

    def messages(self) -> list[dict[str, str]]:
        """The prompt as the dicts `apply_chat_template` takes."""
        return [{"role": m.role, "content": m.content} for m in self.prompt]


@dataclass(frozen=True)
class SourcedRow:
    """A row and where it came from; `offset + 1` is the partition's next offset after it."""

    partition: int
    offset: int
    row: SftRow


class BadRow(ValueError):
    """A record in the input that is not an SftRow: where it is, its raw bytes and why."""

    def __init__(self, location: str, partition: int, offset: int, key: str | None, payload: bytes, detail: str):
        super().__init__(
            f"{location}: not an SftRow: {detail} (--skip-bad-rows sends such rows to the dead letters and goes on)"
        )
        self.partition, self.offset, self.key, self.payload, self.detail = partition, offset, key, payload, detail


BadRowHandler = Callable[[BadRow], None]
"""What a source does with a bad row instead of raising it (`--skip-bad-rows`)."""


class RowSource(Protocol):
    """Where SFT rows come from: a finite, replayable, partitioned log. A record that is not an
    SftRow raises `BadRow`, or goes to `on_bad_row` when that is set (the row is skipped)."""

    on_bad_row: BadRowHandler | None

    def describe(self) -> str:
        """A URI-like name for logs and checkpoints (e.g. `jsonl:/path`, `kafka:spa.sft`)."""
        ...

    def end_offsets(self) -> Offsets:
        """The current end (exclusive) of every partition: fixes an epoch's range."""
        ...

    def read(self, start: Offsets, end: Offsets) -> Iterator[SourcedRow]:
        """Rows in `[start, end)` per partition, partitions in ascending order (deterministic)."""
        ...


class JsonlRowSource:
    """SftRow JSON lines in one file: partition 0, offset = line index (blank lines count)."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise FileNotFoundError(f"SFT input {path} does not exist (expected a JSONL file of SftRow)")
        self.path = path
        self.on_bad_row: BadRowHandler | None = None

    def describe(self) -> str:
        return f"jsonl:{self.path}"

    def end_offsets(self) -> Offsets:
        with self.path.open("rb") as f:
            return {0: sum(1 for _ in f)}

    def read(self, start: Offsets, end: Offsets) -> Iterator[SourcedRow]:
        first, stop = start.get(0, 0), end.get(0, 0)
        with self.path.open(encoding="utf-8") as f:
            for index, line in enumerate(f):
                if index >= stop:
                    break
                if index < first or not line.strip():
                    continue
                try:
                    row = SftRow.from_dict(json.loads(line))
                except (ValueError, TypeError, KeyError) as err:
                    bad = BadRow(f"{self.path}:{index + 1}", 0, index, None, line.rstrip("\n").encode(), str(err))
                    if self.on_bad_row is None:
                        raise bad from err
                    self.on_bad_row(bad)
                    continue
                yield SourcedRow(0, index, row)


def open_source(spec: str, *, brokers: str | None = None) -> RowSource:
    """`jsonl:<path>` or `kafka:<topic>` (brokers from the argument or `KAFKA_BROKERS`)."""
    kind, _, target = spec.partition(":")
    if kind == "jsonl" and target:
        return JsonlRowSource(Path(target))
    if kind == "kafka" and target:
        from .kafka_source import KafkaRowSource  # optional dependency: confluent-kafka

        return KafkaRowSource(topic=target, brokers=brokers)
    raise ValueError(f"input {spec!r}: expected jsonl:<path> or kafka:<topic>")
