"""PPO input: Rollout records from `kafka:<topic>` or `jsonl:<path>`, in offset order, with rejects.

A source is a partitioned log read forward from a start position (next offset per partition).
Every item it yields carries its (partition, offset) and is either a checked Rollout or a
rejection (reason code + detail + the original bytes), so the caller can advance past a bad
record, count it, and dead-letter it: an error at a boundary loses nothing.
`dead_letters.py` writes those rejections as `Rejected` records to spa.dlq (or a JSONL file).

Kafka is read `read_committed` (never an aborted transaction) with partitions assigned by hand:
the trainer's checkpoint holds the truth about offsets, the consumer group only mirrors it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from .avro_records import FrameDecodeError, spa_schemas
from .data import Offsets
from .policy_publish import POLICY_VERSION_HEADER, check_topic

SINGLE_OBJECT_MAGIC = b"\xc3\x01"
Headers = dict[str, bytes]


class RolloutRejected(ValueError):
    """A record that cannot be trained on; `reason` is the spa.dlq reason code."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


@dataclass(frozen=True)
class SourcedRollout:
    """One consumed record: a checked Rollout (`record`) or a rejection (`reason`, `detail`).
    `offset + 1` is its partition's next offset; `payload` is the value exactly as read."""

    partition: int
    offset: int
    key: str | None
    payload: bytes
    headers: Headers = field(default_factory=dict)
    record: dict[str, Any] | None = None
    reason: str = ""
    detail: str = ""


def _json_safe(value: Any) -> Any:
    # fastavro decodes timestamp-millis to datetime; checkpoints and JSONL want epoch millis.
    if isinstance(value, datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def _require(record: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = record.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind in (int, float, (int, float))):
        raise RolloutRejected(
            "bad-record", f"field {name!r} is {value!r:.60}; expected {getattr(kind, '__name__', kind)}"
        )
    return value


def check_rollout(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The record (JSON-safe) if PPO can train on it (schemas/Rollout.avsc, docs/spa-ppo.md#sequence);
    otherwise `RolloutRejected` naming the field and what would be right."""
    record = _json_safe(dict(raw))
    for name in ("trajectory_id", "group_id"):
        if not _require(record, name, str):
            raise RolloutRejected("bad-record", f"field {name!r} is empty; expected a non-empty id")
    if _require(record, "policy_version", int) < 0:
        raise RolloutRejected("bad-record", f"policy_version {record['policy_version']} must be >= 0")
    messages = _require(record, "messages", list)
    if not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in messages
    ):
        raise RolloutRejected("bad-record", "messages must be a list of {role, content} strings")
    if not messages or messages[-1]["role"] != "assistant":
        last = messages[-1]["role"] if messages else "nothing"
        raise RolloutRejected(
            "bad-record",
            f"messages end with {last}; expected the last assistant message (docs/spa-prompts.md#conversation)",
        )
    rewards = _require(record, "turn_rewards", list)
    numbers = [*rewards, _require(record, "penalty", (int, float))]
    if not all(isinstance(r, (int, float)) and not isinstance(r, bool) and math.isfinite(r) for r in numbers):
        raise RolloutRejected("bad-record", f"turn_rewards {rewards!r:.80} and penalty must be finite numbers")
    _require(record, "success", bool)
    total = float(sum(rewards)) + float(record["penalty"])
    stated = record.get("score")
    if stated is not None and not math.isclose(total, float(stated), rel_tol=1e-9, abs_tol=1e-9):
        raise RolloutRejected(
            "score-mismatch", f"score {stated} != Σ turn_rewards + penalty = {total} (docs/spa-ppo.md#sequence)"
        )
    return record


def decode_rollout(value: bytes, headers: Headers) -> dict[str, Any]:
    """An Avro single-object frame (any known Rollout version) or a JSON object, checked; the
    `spa-policy-version` header, when present, must agree with the record."""
    if value.startswith(SINGLE_OBJECT_MAGIC):
        try:
            raw: Any = spa_schemas().decode("Rollout", value)
        except FrameDecodeError as err:
            raise RolloutRejected(err.code, str(err)) from err
    elif value.lstrip()[:1] != b"{":  # same code as the TS decoder for a value with no frame header
        raise RolloutRejected(
            "bad-magic", f"not an Avro single-object frame: starts with {value[:4].hex(' ')}, expected c3 01"
        )
    else:
        try:
            raw = json.loads(value)
        except (UnicodeDecodeError, ValueError) as err:
            raise RolloutRejected("bad-json", f"value starts like JSON but does not parse: {err}") from err
    record = check_rollout(raw)
    stated = headers.get(POLICY_VERSION_HEADER)
    if stated is not None and stated.decode("utf-8", "replace") != str(record["policy_version"]):
        raise RolloutRejected(
            "bad-header",
            f"header {POLICY_VERSION_HEADER}={stated!r} disagrees with policy_version {record['policy_version']}",
        )
    return record


def sourced(partition: int, offset: int, key: str | None, value: bytes, headers: Headers) -> SourcedRollout:
    """Decode one consumed value into an accepted or rejected item (never raises)."""
    try:
        record = decode_rollout(value, headers)
        return SourcedRollout(partition, offset, key, value, headers, record=record)
    except RolloutRejected as err:
        return SourcedRollout(partition, offset, key, value, headers, reason=err.reason, detail=str(err))


class RolloutSource(Protocol):
    """A forward reader over a partitioned log of Rollout records."""

    def describe(self) -> str:
        """URI-like name (`kafka:spa.rollouts`, `jsonl:/path`)."""
        ...

    def poll(self, timeout_s: float) -> SourcedRollout | None:
        """The next record (per-partition offset order), or None when none came within `timeout_s`."""
        ...

    def exhausted(self) -> bool:
        """True when no record can ever come again (end of a file); a topic never ends."""
        ...

    def commit(self, offsets: Offsets) -> None:
        """Mirror `offsets` (everything below is trained) to the consumer group, if any."""
        ...

    def close(self) -> None:
        """Release the connection or file."""
        ...


class JsonlRolloutSource:
    """Rollout JSON lines (as `spa generate --target rollouts --out f.jsonl` writes them): one
    partition, offset = line index (blank lines count). Finite: `exhausted()` at end of file."""

    def __init__(self, path: Path, start: Offsets) -> None:
        if not path.is_file():
            raise FileNotFoundError(f"PPO input {path} does not exist (expected a JSONL file of Rollout records)")
        self.path = path
        self._file = path.open("rb")
        self._next = 0
        self._done = False
        for _ in range(start.get(0, 0)):  # skip what the checkpoint says was consumed
            if not self._file.readline():
                break
            self._next += 1

    def describe(self) -> str:
        return f"jsonl:{self.path}"

    def poll(self, timeout_s: float) -> SourcedRollout | None:
        while not self._done:
            line = self._file.readline()
            if not line:
                self._done = True
                return None
            offset, self._next = self._next, self._next + 1
            if line.strip():
                return sourced(0, offset, None, line.rstrip(b"\r\n"), {})
        return None

    def exhausted(self) -> bool:
        return self._done

    def commit(self, offsets: Offsets) -> None:
        """Nothing to mirror: the checkpoint is the only record of a file's position."""

    def close(self) -> None:
        self._file.close()


class KafkaRolloutSource:
    """Rollout records from one topic, all partitions assigned by hand, `read_committed`.

    Backpressure: block. One `poll` hands one record to the training loop, which asks for the
    next only when it wants it; librdkafka's own fetch queue is bounded (`queued.max.messages.kbytes`).
    """

    def __init__(
        self, topic: str, start: Offsets, *, brokers: str | None, group_id: str, connect_timeout_s: float = 10.0
    ) -> None:
        from .kafka_source import ck, default_brokers  # optional dependency: confluent-kafka

        self.topic = topic
        self.address = default_brokers(brokers)
        self.last_error = ""
        self.consumer = ck.Consumer(
            {
                "bootstrap.servers": self.address,
                "group.id": group_id or "spa-ppo",
                "enable.auto.commit": False,  # offsets reach the group only after a checkpoint
                "isolation.level": "read_committed",  # never train on an aborted transaction
                "auto.offset.reset": "earliest",
            }
        )
        partitions = self._partitions(connect_timeout_s)
        # OFFSET_STORED: a partition the checkpoint does not know starts at the group's committed
        # offset, else (auto.offset.reset) at the earliest record.
        self.consumer.assign([ck.TopicPartition(topic, p, start.get(p, ck.OFFSET_STORED)) for p in partitions])

    def _partitions(self, timeout_s: float) -> list[int]:
        hint = "create it (infra/kafka topics) or run a generator with --target rollouts --out kafka first"
        try:
            topic = check_topic(self.consumer, self.topic, self.address, hint, timeout_s)
        except (ConnectionError, ValueError):
            self.consumer.close()
            raise
        return sorted(topic.partitions)

    def describe(self) -> str:
        return f"kafka:{self.topic}"

    def poll(self, timeout_s: float) -> SourcedRollout | None:
        msg = self.consumer.poll(timeout_s)
        if msg is None:
            return None
        if msg.error():
            if msg.error().fatal():
                raise RuntimeError(f"kafka {self.topic} at {self.address}: fatal consumer error {msg.error()}")
            self.last_error = str(msg.error())  # transient (broker away): librdkafka retries
            return None
        raw_key = msg.key()
        key = raw_key.decode("utf-8", "replace") if raw_key is not None else None
        headers = {name: value or b"" for name, value in (msg.headers() or [])}
        return sourced(int(msg.partition()), int(msg.offset()), key, msg.value() or b"", headers)

    def exhausted(self) -> bool:
        return False

    def commit(self, offsets: Offsets) -> None:
        from .kafka_source import ck

        if offsets:
            self.consumer.commit(
                offsets=[ck.TopicPartition(self.topic, p, o) for p, o in sorted(offsets.items())], asynchronous=False
            )

    def close(self) -> None:
        self.consumer.close()


def open_rollout_source(spec: str, start: Offsets, *, brokers: str | None = None, group_id: str = "") -> RolloutSource:
    """`jsonl:<path>` or `kafka:<topic>`, positioned at `start` (partitions missing from it start
    at the group's committed offset, else the earliest)."""
    kind, _, target = spec.partition(":")
    if kind == "jsonl" and target:
        return JsonlRolloutSource(Path(target), start)
    if kind == "kafka" and target:
        return KafkaRolloutSource(target, start, brokers=brokers, group_id=group_id)
    raise ValueError(f"input {spec!r}: expected kafka:<topic> or jsonl:<path>")
