"""Consumed records and the logs they come from, before any decoding (the trainer's lowest I/O layer).

A log is a set of partitions, each an ordered sequence of records, and a position in it is a
per-partition offset map. Both jobs read one: SFT a fixed `[start, end)` range per epoch
(`sft_rows.RowSource`), PPO forward from a start position (`rollouts.RolloutSource`). A JSONL
file is one partition (`JsonlLog`, offset = line index); a Kafka topic has many (`kafka.client.KafkaLog`).
The jobs' decoders sit above this module, the Kafka client beside it; neither is imported here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol

Offsets = dict[int, int]
"""Next offset to read, per partition."""

Headers = dict[str, bytes]

# The header names and the values each may take, shared with the TS side (streams/kafka/headers.ts):
# a W3C traceparent (Trace Context §3.2), 16 lowercase hex digits, a decimal integer (up to
# JavaScript's Number.MAX_SAFE_INTEGER, below).
KAFKA_HEADERS_FILE = Path(__file__).resolve().parents[3] / "schemas" / "kafka-headers.json"
_HEADERS: dict[str, Any] = json.loads(KAFKA_HEADERS_FILE.read_text("utf-8"))["properties"]
_BY_FIELD = {spec["x-field"]: name for name, spec in _HEADERS.items()}
POLICY_VERSION_HEADER = _BY_FIELD["policyVersion"]
SCHEMA_FINGERPRINT_HEADER = _BY_FIELD["schemaFingerprint"]
TRACEPARENT_HEADER = _BY_FIELD["traceparent"]
_HEADER_FORMS = {name: (re.compile(spec["pattern"]), spec["description"]) for name, spec in _HEADERS.items()}
_MAX_POLICY_VERSION = 2**53 - 1


def _too_big(decimal: str) -> bool:
    digits = decimal.lstrip("0")  # the TS side reads "007" as 7
    return len(digits) > 16 or (digits != "" and int(digits) > _MAX_POLICY_VERSION)


def check_spa_headers(headers: Headers) -> None:
    """``ValueError`` naming the header when a SPA header is malformed, exactly where the TS
    side's ``decodeSpaHeaders`` (streams/kafka/headers.ts) refuses one, so both sides dead-letter
    the same records (reason ``bad-header``)."""
    for name, (form, expected) in _HEADER_FORMS.items():
        value = headers.get(name)
        if value is None:
            continue
        text = value.decode("utf-8", "replace")
        if not form.fullmatch(text) or (name == POLICY_VERSION_HEADER and _too_big(text)):
            raise ValueError(f"header {name}={text!r:.80} is malformed: {expected}")


@dataclass(frozen=True)
class ConsumedRecord:
    """One record as read: where it is, its key, its value bytes exactly as stored, its headers."""

    partition: int
    offset: int
    key: str | None
    value: bytes
    headers: Headers = field(default_factory=dict)


class RecordLog(Protocol):
    """A partitioned, replayable log of records (a JSONL file, a Kafka topic)."""

    def describe(self) -> str:
        """A URI-like name for logs and checkpoints (`jsonl:/path`, `kafka:spa.sft`)."""
        ...

    def location(self, partition: int, offset: int) -> str:
        """Where one record is, for an error message (`file:line`, `kafka topic[partition]@offset`)."""
        ...

    def end_offsets(self) -> Offsets:
        """The current end (exclusive) of every partition."""
        ...

    def read(self, start: Offsets, end: Offsets) -> Iterator[ConsumedRecord]:
        """Records in `[start, end)` per partition, partitions in ascending order (deterministic)."""
        ...

    def seek(self, start: Offsets) -> None:
        """Position `poll` at `start` (a partition missing from it starts at the consumer group's
        committed offset, else at the earliest record)."""
        ...

    def poll(self, timeout_s: float) -> ConsumedRecord | None:
        """The next record after `seek` (per-partition offset order), or None when none came in time."""
        ...

    def exhausted(self) -> bool:
        """True when `poll` can never return a record again (end of a file); a topic never ends."""
        ...

    def commit(self, offsets: Offsets) -> None:
        """Mirror `offsets` to the consumer group, if the log has one (only after a checkpoint
        holding them is on disk: the checkpoint is the truth, the group a convenience for tools)."""
        ...

    def close(self) -> None:
        """Release the connection or file."""
        ...


class JsonlLog:
    """One JSONL file as partition 0: offset = line index (blank lines count and are skipped)."""

    def __init__(self, path: Path, missing: str) -> None:
        if not path.is_file():
            raise FileNotFoundError(missing.format(path=path))
        self.path = path
        self._file: BinaryIO | None = None
        self._next = 0
        self._done = False

    def describe(self) -> str:
        return f"jsonl:{self.path}"

    def location(self, partition: int, offset: int) -> str:
        return f"{self.path}:{offset + 1}"

    def end_offsets(self) -> Offsets:
        with self.path.open("rb") as f:
            return {0: sum(1 for _ in f)}

    def read(self, start: Offsets, end: Offsets) -> Iterator[ConsumedRecord]:
        first, stop = start.get(0, 0), end.get(0, 0)
        with self.path.open("rb") as f:
            for index, line in enumerate(f):
                if index >= stop:
                    break
                if index >= first and line.strip():
                    yield ConsumedRecord(0, index, None, line.rstrip(b"\r\n"))

    def seek(self, start: Offsets) -> None:
        self.close()
        self._file, self._next, self._done = self.path.open("rb"), 0, False
        for _ in range(start.get(0, 0)):  # skip what the checkpoint says was consumed
            if not self._file.readline():
                break
            self._next += 1

    def poll(self, timeout_s: float) -> ConsumedRecord | None:
        if self._file is None:
            self.seek({})
        assert self._file is not None
        while not self._done:
            line = self._file.readline()
            if not line:
                self._done = True
                return None
            offset, self._next = self._next, self._next + 1
            if line.strip():
                return ConsumedRecord(0, offset, None, line.rstrip(b"\r\n"))
        return None

    def exhausted(self) -> bool:
        return self._done

    def commit(self, offsets: Offsets) -> None:
        """Nothing to mirror: the checkpoint is the only record of a file's position."""

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
