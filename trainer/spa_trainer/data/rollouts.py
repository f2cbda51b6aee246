"""PPO input: Rollout records in offset order, with rejects (`RolloutSource` over a `records.RecordLog`).

A source is a partitioned log read forward from a start position (next offset per partition).
Every item it yields carries its (partition, offset) and is either a checked Rollout or a
rejection (reason code + detail + the original bytes), so the caller can advance past a bad
record, count it, and dead-letter it: an error at a boundary loses nothing.
`dead_letters.py` writes those rejections as `Rejected` records to spa.dlq (or a JSONL file);
`sources.open_rollout_source` picks the log (`kafka:<topic>` or `jsonl:<path>`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .avro import decode_value
from .records import POLICY_VERSION_HEADER, Headers, Offsets, RecordLog, check_spa_headers
from .reject_reasons import RecordRejected


class RolloutRejected(RecordRejected):
    """A record that cannot be trained on; `reason` is the spa.dlq reason code."""


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
    """An Avro single-object frame (any known Rollout version) or a JSON object, checked; its SPA
    headers must be well formed (as the TS side checks them), and the `spa-policy-version` header,
    when present, must agree with the record."""
    try:
        check_spa_headers(headers)
    except ValueError as err:
        raise RolloutRejected("bad-header", str(err)) from err
    record = check_rollout(decode_value("Rollout", value))
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
    except RecordRejected as err:
        return SourcedRollout(partition, offset, key, value, headers, reason=err.reason, detail=str(err))


class RolloutSource:
    """Checked Rollout records (or rejections) of a partitioned log, read forward from `start`."""

    def __init__(self, log: RecordLog, start: Offsets) -> None:
        self.log = log
        log.seek(start)

    def describe(self) -> str:
        """URI-like name (`kafka:spa.rollouts`, `jsonl:/path`)."""
        return self.log.describe()

    def poll(self, timeout_s: float) -> SourcedRollout | None:
        """The next record (per-partition offset order), or None when none came within `timeout_s`."""
        record = self.log.poll(timeout_s)
        if record is None:
            return None
        return sourced(record.partition, record.offset, record.key, record.value, record.headers)

    def exhausted(self) -> bool:
        """True when no record can ever come again (end of a file); a topic never ends."""
        return self.log.exhausted()

    def last_error(self) -> str:
        """The log's latest transient error (a broker away), for the waiting note; "" if none."""
        return getattr(self.log, "last_error", "")

    def commit(self, offsets: Offsets) -> None:
        """Mirror `offsets` (everything below is trained) to the consumer group, if any."""
        self.log.commit(offsets)

    def close(self) -> None:
        """Release the connection or file."""
        self.log.close()
