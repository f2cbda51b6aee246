"""SFT input: the SftRow record, its decoding, and `RowSource`, SFT rows over a `records.RecordLog`.

A source is a set of partitions (a JSONL file is one partition; a Kafka topic has many), and a
position in it is a per-partition offset map. Training reads a *fixed* offset range (SPA trains
epochs over a fixed data set), and a checkpoint stores the position within it (`sft_data.py`), so a
restart neither skips nor repeats a row. `sources.open_source` picks the log.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .avro import decode_value
from .records import ConsumedRecord, Headers, Offsets, RecordLog, check_spa_headers
from .reject_reasons import RecordRejected, RejectReason


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


def decode_row(record: ConsumedRecord) -> SftRow:
    """The SftRow of a consumed record: its SPA headers checked as the TS side checks them, its
    value an Avro single-object frame (older writer schemas too) or, for hand-made topics and JSONL
    files, a JSON object. ``RecordRejected`` names the shared reason (schemas/reject-reasons.json)."""
    try:
        check_spa_headers(record.headers)
    except ValueError as err:
        raise RecordRejected("bad-header", str(err)) from err
    fields = decode_value("SftRow", record.value)
    try:
        return SftRow.from_dict(fields)
    except (ValueError, TypeError, KeyError) as err:
        raise RecordRejected("bad-record", f"{type(err).__name__}: {err}") from err


@dataclass(frozen=True)
class SourcedRow:
    """A row and where it came from; `offset + 1` is the partition's next offset after it."""

    partition: int
    offset: int
    row: SftRow
    headers: Headers = field(default_factory=dict, compare=False)  # traceparent: the step span links to it


class BadRow(ValueError):
    """A record in the input that is not an SftRow: where it is, its raw bytes and why (the fields
    `dead_letters.Rejection` asks for, so it goes to the dead letters as it is)."""

    def __init__(self, location: str, record: ConsumedRecord, reason: RejectReason, detail: str) -> None:
        super().__init__(
            f"{location}: not an SftRow: {reason}: {detail}"
            " (--skip-bad-rows sends such rows to the dead letters and goes on)"
        )
        self.partition, self.offset, self.key = record.partition, record.offset, record.key
        self.payload, self.headers, self.reason, self.detail = record.value, record.headers, reason, detail


BadRowHandler = Callable[[BadRow], None]
"""What a source does with a bad row instead of raising it (`--skip-bad-rows`)."""


class RowSource:
    """SFT rows of a finite, replayable, partitioned log. A record that is not an SftRow raises
    `BadRow`, or goes to `on_bad_row` when that is set (the row is skipped)."""

    def __init__(self, log: RecordLog) -> None:
        self.log = log
        self.on_bad_row: BadRowHandler | None = None

    def describe(self) -> str:
        """A URI-like name for logs and checkpoints (e.g. `jsonl:/path`, `kafka:spa.sft`)."""
        return self.log.describe()

    def end_offsets(self) -> Offsets:
        """The current end (exclusive) of every partition: fixes an epoch's range."""
        return self.log.end_offsets()

    def read(self, start: Offsets, end: Offsets) -> Iterator[SourcedRow]:
        """Rows in `[start, end)` per partition, partitions in ascending order (deterministic)."""
        for record in self.log.read(start, end):
            try:
                row = decode_row(record)
            except RecordRejected as err:
                location = self.log.location(record.partition, record.offset)
                bad = BadRow(location, record, err.reason, str(err))
                if self.on_bad_row is None:
                    raise bad from err
                self.on_bad_row(bad)
                continue
            yield SourcedRow(record.partition, record.offset, row, record.headers)

    def commit(self, offsets: Offsets) -> None:
        """Record `offsets` in the consumer group, if any (called only after a checkpoint landed)."""
        self.log.commit(offsets)

    def close(self) -> None:
        """Release the log."""
        self.log.close()
